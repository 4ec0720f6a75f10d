// The character model's forward with what each layer keeps, the cross-entropy, then every
// step's adjoint in reverse.

#include "core/backward/model_backward.h"

#include "core/backward/block_backward.h"
#include "core/layers/cross_entropy.h"
#include "core/layers/embedding.h"
#include "core/layers/layer_norm.h"
#include "core/backward/linear_backward.h"
#include "core/error.h"
#include "core/pass/projection.h"

namespace mha {

namespace {

// One layer's forward: its input's block output and what its backward reads.
struct LayerRun {
    BlockKept kept;
    Tensor weights;  // (B, h, N, N) the attention weights P
};

ForwardOptions layer_options(const ModelLayer& layer, std::size_t threads) {
    ForwardOptions options;
    options.heads = layer.heads;
    options.threads = threads;
    return options;
}

}  // namespace

ModelBackward model_forward_backward(const Model& m, const std::vector<std::size_t>& tokens,
                                     const std::vector<std::size_t>& targets, std::size_t batch,
                                     std::size_t threads) {
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
    Masks causal;
    causal.causal = true;
    NullTracer quiet;
    Tensor x = embed(m.token_embedding, m.position_embedding, tokens, batch);  // (B, N, d_model)
    std::vector<LayerRun> runs(m.layers.size());
    for (std::size_t l = 0; l < m.layers.size(); ++l) {
        const ModelLayer& layer = m.layers[l];
        const ForwardOptions options = layer_options(layer, threads);
        PassTrace trace(quiet, PassSpec{});
        ForwardResult r = forward_block(layer.attention, layer.block, BlockKind::Pre, {x, x, x},
                                        causal, options, trace, &runs[l].kept);
        runs[l].weights = std::move(r.weights);
        x = std::move(r.output);
    }
    const Tensor final_norm = layer_norm(x, m.norm_weight, m.norm_bias);
    ModelBackward result;
    result.logits = project(final_norm, m.head_weight, m.head_bias, threads);  // (B, N, V)
    const CrossEntropy ce = cross_entropy(result.logits, targets, threads);
    result.loss = ce.loss;

    Model& g = result.grads;
    g.vocab = m.vocab;
    LinearGrads head = linear_backward(final_norm, m.head_weight, true, ce.dlogits, threads);
    g.head_weight = std::move(head.dw);
    g.head_bias = std::move(head.db);
    LayerNormGrads norm = layer_norm_backward(x, m.norm_weight, head.dx, threads);
    g.norm_weight = std::move(norm.gamma);
    g.norm_bias = std::move(norm.beta);
    Tensor dx = std::move(norm.x);
    g.layers.resize(m.layers.size());
    for (std::size_t l = m.layers.size(); l-- > 0;) {
        const ModelLayer& layer = m.layers[l];
        PassTrace trace(quiet, PassSpec{});
        BlockGradients b =
            block_backward(layer.attention, layer.block, BlockKind::Pre, causal,
                           layer_options(layer, threads), runs[l].kept, runs[l].weights, dx, trace);
        runs[l] = LayerRun();  // what this layer kept is read no more
        g.layers[l] = ModelLayer{std::move(b.attention), std::move(b.block), layer.heads};
        dx = std::move(b.input);
    }
    EmbeddingGrads embedding = embed_backward(dx, tokens, m.vocab_size(), m.context(), threads);
    g.token_embedding = std::move(embedding.token);
    g.position_embedding = std::move(embedding.position);
    return result;
}

}  // namespace mha
