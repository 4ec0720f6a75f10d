// One training step: forward and backward, the global clip, AdamW on every parameter.

#include "core/train/train_step.h"

#include <algorithm>

#include "core/backward/model_backward.h"
#include "core/threads/parallel.h"
#include "core/train/parameters.h"

namespace mha {

TrainState start_training(Model model) {
    TrainState state;
    state.model = std::move(model);
    for (const Parameter& p : model_parameters(state.model))
        state.moments.push_back(adamw_moments(p.shape));
    return state;
}

MicroBatches micro_batches(std::size_t batch, std::size_t row_length, std::size_t micro_batch) {
    const std::size_t rows =
        std::max({std::size_t(1), micro_batch / std::max<std::size_t>(1, row_length),
                  (batch + max_micro_batches - 1) / max_micro_batches});
    return {rows, (batch + rows - 1) / rows};
}

namespace {

// Every tensor of `model` moved out of the workspace it was made in, into memory of its own: a
// micro-batch's gradients kept until the sum would otherwise pin the workspace's blocks, and
// every micro-batch would take new ones.
void own_memory(Model& model) {
    for (const Parameter& p : model_parameters(model))
        for (Tensor* part : p.parts) *part = Tensor(part->shape(), part->to_vector());
}

// The loss and the gradients of one step: the micro-batches' sums, in order.
struct Sums {
    double loss = 0.0;
    std::vector<Tensor> grads;  // one per parameter, its shape: the parts stacked
};

Sums forward_backward(TrainState& state, const std::vector<std::size_t>& tokens,
                      const std::vector<std::size_t>& targets, std::size_t batch,
                      std::size_t micro_batch, std::size_t threads) {
    if (batch == 0 || tokens.empty() || tokens.size() % batch != 0 ||
        targets.size() != tokens.size()) {  // model_forward_backward says what is wrong
        model_forward_backward(state.model, tokens, targets, batch, threads);
    }
    const std::size_t n = tokens.size() / batch;
    const MicroBatches split = micro_batches(batch, n, micro_batch);
    const std::size_t rows = split.rows, parts = split.count;
    const std::size_t slots = std::max<std::size_t>(1, std::min(threads, parts));
    if (state.workspaces.size() < slots) state.workspaces.resize(slots);
    std::vector<double> losses(parts);
    std::vector<Model> grads(parts);
    parallel_each(parts, threads, [&](std::size_t part, std::size_t slot) {
        const std::size_t from = part * rows * n, to = std::min(batch, (part + 1) * rows) * n;
        ModelBackward pass = model_forward_backward(
            state.model, {tokens.begin() + from, tokens.begin() + to},
            {targets.begin() + from, targets.begin() + to}, (to - from) / n, threads,
            &state.workspaces[slot], tokens.size());
        losses[part] = pass.loss;
        grads[part] = std::move(pass.grads);
        own_memory(grads[part]);  // the workspace's blocks free for the next micro-batch
    });
    Sums sums;
    for (const double loss : losses) sums.loss += loss;
    std::vector<std::vector<Parameter>> each(parts);  // each part's gradients, by parameter
    for (std::size_t part = 0; part < parts; ++part) each[part] = model_parameters(grads[part]);
    sums.grads.resize(each[0].size());
    parallel_each(sums.grads.size(), threads, [&](std::size_t i, std::size_t) {  // parts in order
        Tensor total = gather_parameter(each[0][i]);  // contiguous; added to in place, as
                                                      // part 0's gradient is read no more
        for (std::size_t part = 1; part < parts; ++part) {
            const Tensor g = gather_parameter(each[part][i]);
            for (std::size_t e = 0, count = g.numel(); e < count; ++e)
                total.data()[e] += g.data()[e];
        }
        sums.grads[i] = std::move(total);
    });
    return sums;
}

}  // namespace

StepResult train_step(TrainState& state, const std::vector<std::size_t>& tokens,
                      const std::vector<std::size_t>& targets, std::size_t batch,
                      const TrainRecipe& recipe, std::size_t threads) {
    Sums sums = forward_backward(state, tokens, targets, batch, recipe.micro_batch, threads);
    const std::vector<Parameter> params = model_parameters(state.model);
    std::vector<Tensor>& grads = sums.grads;
    std::vector<Tensor*> grad_pointers;
    for (Tensor& g : grads) grad_pointers.push_back(&g);

    StepResult result;
    result.loss = sums.loss;
    result.grad_norm = clip_grad_norm(grad_pointers, recipe.clip);
    result.lr = learning_rate(std::size_t(state.step), recipe.steps, recipe.lr, recipe.warmup);
    ++state.step;
    parallel_each(params.size(), threads, [&](std::size_t i, std::size_t) {  // one a thread
        const Parameter& p = params[i];
        Tensor values = gather_parameter(p);
        const double decay =
            takes_weight_decay(p.name, p.shape.size()) ? recipe.adamw.weight_decay : 0.0;
        adamw_step(values, grads[i], state.moments[i], state.step, result.lr, decay,
                   recipe.adamw, threads);
        scatter_parameter(p, values);
    });
    return result;
}

}  // namespace mha
