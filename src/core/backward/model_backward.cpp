// The character model's forward with what each layer keeps, the cross-entropy, then every
// step's adjoint in reverse.

#include "core/backward/model_backward.h"

#include "core/backward/block_backward.h"
#include "core/backward/linear_backward.h"
#include "core/error.h"
#include "core/layers/cross_entropy.h"
#include "core/layers/embedding.h"
#include "core/layers/layer_norm.h"
#include "core/pass/describe.h"
#include "core/pass/projection.h"

namespace mha {

namespace {

// An untraced layer's forward or backward, l = layers[l], shown as one step.
void show_layer(PassTrace& trace, const Tensor& x, const std::string& tensor,
                const std::string& expression) {
    trace.show(
        x, [&] { return described(StepKind::Layer, 0, "block", tensor, expression, model_dims); });
}

// Both entries: `traced` is the layer shown step by step when `trace` is on; the tensors from
// `workspace` when there is one; the loss's mean over mean_over positions (0: these).
ModelBackward run(const Model& m, const std::vector<std::size_t>& tokens,
                  const std::vector<std::size_t>& targets, std::size_t batch, std::size_t traced,
                  std::size_t threads, Workspace* workspace, std::size_t mean_over,
                  PassTrace& trace) {
    if (batch == 0 || tokens.empty() || tokens.size() % batch != 0 ||
        tokens.size() / batch > m.context()) {
        throw Error("the model reads " + std::to_string(batch) + " rows of 1 to " +
                    std::to_string(m.context()) + " tokens, got " + std::to_string(tokens.size()) +
                    " tokens");
    }
    if (targets.size() != tokens.size()) {
        throw Error("the model's targets are " + std::to_string(targets.size()) +
                    " ids, expected one per token (" + std::to_string(tokens.size()) + ")");
    }
    NullTracer quiet;
    PassTrace untraced(quiet);
    const auto trace_of = [&](std::size_t l) -> PassTrace& {
        return l == traced ? trace : untraced;
    };
    ModelBackward result;
    ModelResult& f = result.forward;
    Tensor x = embed(m.token_embedding, m.position_embedding, tokens, batch, workspace);
    trace.show(x, [&] {  // (B, N, d_model)
        return described(StepKind::Embed, 0, "embed", "x",
                         "x = token_embedding[t] + position_embedding[:N]", model_dims);
    });
    std::vector<BlockKept> kept(m.layers.size());
    for (std::size_t l = 0; l < m.layers.size(); ++l) {
        const ModelLayer& layer = m.layers[l];
        ForwardResult r = forward_block(
            layer.attention, layer.block, BlockKind::Pre, {x, x, x}, layer_masks(layer),
            layer_options(layer, threads, workspace), trace_of(l), &kept[l]);
        f.weights.push_back(std::move(r.weights));
        x = std::move(r.output);
        if (l != traced) show_layer(trace, x, "x", "x = layers[" + std::to_string(l) + "](x)");
    }
    const Tensor final_norm = layer_norm(x, m.norm_weight, m.norm_bias, threads, workspace);
    trace.show(final_norm, [&] { return norm_step(22, "x_final", "norm", "x", m.d_model()); });
    f.output = x;
    f.logits = project(final_norm, m.head_weight, m.head_bias, threads, workspace);
    trace.show(f.logits, [&] {  // (B, N, V)
        return described(StepKind::Logits, 23, "project", "logits",
                         "logits = x_final @ lm_head.T + b", {"B", "N", "V"},
                         macs_of({x.size(0), x.size(1), m.vocab_size(), m.d_model()}));
    });
    const CrossEntropy ce = cross_entropy(f.logits, targets, threads, mean_over, workspace);
    result.loss = ce.loss;

    Model& g = result.grads;
    g.vocab = m.vocab;
    trace.begin_backward();
    trace.show(ce.dlogits, [&] {
        return described(StepKind::LossGrad, 23, "grad", "dlogits",
                         "dlogits = (F.softmax(logits, -1) - F.one_hot(targets, V)) / (B*N)  "
                         "(L = F.cross_entropy(logits, targets))",
                         {"B", "N", "V"});
    });
    LinearGrads head = traced_linear_backward(
        23,
        {"lm_head.weight", "x_final  (summed over B and the positions)", "dlogits",
         "dlm_head.weight", "dlm_head.bias", "dx_final", "V", "d_model"},
        final_norm, m.head_weight, ce.dlogits, threads, workspace, trace);
    g.head_weight = std::move(head.dw);
    g.head_bias = std::move(head.db);
    LayerNormGrads norm = traced_norm_backward(22, "norm", "dx_final", "dx", x, m.norm_weight,
                                               head.dx, threads, workspace, trace);
    g.norm_weight = std::move(norm.gamma);
    g.norm_bias = std::move(norm.beta);
    Tensor dx = std::move(norm.x);
    g.layers.resize(m.layers.size());
    for (std::size_t l = m.layers.size(); l-- > 0;) {
        const ModelLayer& layer = m.layers[l];
        BlockGradients b = block_backward(
            layer.attention, layer.block, BlockKind::Pre, layer_masks(layer),
            layer_options(layer, threads, workspace), kept[l], f.weights[l], dx, trace_of(l));
        kept[l] = BlockKept();  // what this layer kept is read no more
        g.layers[l] = ModelLayer{std::move(b.attention), std::move(b.block), layer.heads, {}};
        dx = std::move(b.input);
        if (l != traced) {
            show_layer(trace, dx, "dx",
                       "dx = layers[" + std::to_string(l) +
                           "]'s backward of dx  (b21 ... b15 in one step)");
        }
    }
    EmbeddingGrads embedding =
        embed_backward(dx, tokens, m.vocab_size(), m.context(), threads, workspace);
    g.token_embedding = std::move(embedding.token);
    g.position_embedding = std::move(embedding.position);
    trace.show(g.token_embedding, [&] {
        return described(StepKind::EmbedGrad, 0, "grad", "dtoken_embedding.weight",
                         "dtoken_embedding.weight = zeros(V, d_model).index_add_(0, tokens, dx)",
                         {"V", "d_model"});
    });
    trace.show(g.position_embedding, [&] {
        return described(StepKind::EmbedGrad, 0, "grad", "dposition_embedding.weight",
                         "dposition_embedding.weight[:N] = dx.sum(0)  (rows past N stay 0)",
                         {"context", "d_model"});
    });
    return result;
}

}  // namespace

ModelBackward model_forward_backward(const Model& m, const std::vector<std::size_t>& tokens,
                                     const std::vector<std::size_t>& targets, std::size_t batch,
                                     std::size_t threads, Workspace* workspace,
                                     std::size_t mean_over) {
    NullTracer quiet;
    PassTrace trace(quiet);
    return run(m, tokens, targets, batch, m.layers.size(), threads, workspace, mean_over, trace);
}

ModelBackward model_forward_backward(const Model& m, const std::vector<std::size_t>& tokens,
                                     const std::vector<std::size_t>& targets,
                                     std::size_t traced_layer, std::size_t threads,
                                     Tracer& tracer) {
    PassTrace trace(tracer);
    Workspace dry = Workspace::dry();  // a dry model's tensors: their shapes, counted
    return run(m, tokens, targets, 1, traced_layer, threads,
               m.token_embedding.dry() ? &dry : nullptr, 0, trace);
}

}  // namespace mha
