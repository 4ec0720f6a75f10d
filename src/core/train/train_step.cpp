// One training step: forward and backward, the global clip, AdamW on every parameter.

#include "core/train/train_step.h"

#include "core/backward/model_backward.h"
#include "core/train/parameters.h"

namespace mha {

TrainState start_training(Model model) {
    TrainState state;
    state.model = std::move(model);
    for (const Parameter& p : model_parameters(state.model))
        state.moments.push_back(adamw_moments(p.shape));
    return state;
}

StepResult train_step(TrainState& state, const std::vector<std::size_t>& tokens,
                      const std::vector<std::size_t>& targets, std::size_t batch,
                      const TrainRecipe& recipe, std::size_t threads) {
    ModelBackward pass =
        model_forward_backward(state.model, tokens, targets, batch, threads, &state.workspace);
    const std::vector<Parameter> params = model_parameters(state.model);
    const std::vector<Parameter> grad_parts = model_parameters(pass.grads);
    std::vector<Tensor> grads;  // one per parameter, its shape: the parts stacked
    grads.reserve(grad_parts.size());
    for (const Parameter& g : grad_parts) grads.push_back(gather_parameter(g));
    std::vector<Tensor*> grad_pointers;
    for (Tensor& g : grads) grad_pointers.push_back(&g);

    StepResult result;
    result.loss = pass.loss;
    result.grad_norm = clip_grad_norm(grad_pointers, recipe.clip);
    result.lr = learning_rate(std::size_t(state.step), recipe.steps, recipe.lr, recipe.warmup);
    ++state.step;
    for (std::size_t i = 0; i < params.size(); ++i) {
        const Parameter& p = params[i];
        Tensor values = gather_parameter(p);
        const double decay =
            takes_weight_decay(p.name, p.shape.size()) ? recipe.adamw.weight_decay : 0.0;
        adamw_step(values, grads[i], state.moments[i], state.step, result.lr, decay,
                   recipe.adamw, threads);
        scatter_parameter(p, values);
    }
    return result;
}

}  // namespace mha
