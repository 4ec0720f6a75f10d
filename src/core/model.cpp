// The character model's forward pass: embeddings, the blocks, the final norm and the head.

#include "core/model.h"

#include "core/block_ops.h"
#include "core/error.h"
#include "core/workspace.h"

namespace mha {

namespace {

const std::vector<std::string> model_dims = {"B", "N", "d_model"};

// x_0 = token_embedding[t] + position_embedding[0..N): (1, N, d_model)
Tensor embed(const Model& m, const std::vector<std::size_t>& tokens) {
    const std::size_t n = tokens.size(), e = m.d_model();
    Tensor x({1, n, e});
    for (std::size_t i = 0; i < n; ++i) {
        const float* token = m.token_embedding.data() + tokens[i] * e;
        const float* position = m.position_embedding.data() + i * e;
        for (std::size_t f = 0; f < e; ++f) x.data()[i * e + f] = token[f] + position[f];
    }
    return x;
}

}  // namespace

std::size_t Model::parameter_count() const {
    std::size_t count = token_embedding.numel() + position_embedding.numel() +
                        norm_weight.numel() + norm_bias.numel() + head_weight.numel() +
                        head_bias.numel();
    for (const ModelLayer& layer : layers)
        count += layer.attention.parameter_count() + layer.block.parameter_count();
    return count;
}

ModelResult forward_model(const Model& m, const std::vector<std::size_t>& tokens,
                          std::size_t traced_layer, std::size_t threads, Tracer& tracer) {
    if (tokens.empty() || tokens.size() > m.context()) {
        throw Error("the model reads 1 to " + std::to_string(m.context()) + " tokens, got " +
                    std::to_string(tokens.size()));
    }
    Tensor x = embed(m, tokens);
    check_in_float32(x, "the embeddings (token_embedding[t] + position_embedding)");
    report(tracer, [&] {
        return make_step(StepKind::Embed, 0, "embed", "x", "x = token_embedding[t] + position_embedding[:N]",
                         model_dims, x);
    });
    Masks causal;
    causal.causal = true;
    ModelResult result;
    NullTracer quiet;
    Workspace workspace;  // each layer's attention reuses the memory of the one before
    for (std::size_t l = 0; l < m.layers.size(); ++l) {
        const ModelLayer& layer = m.layers[l];
        ForwardOptions options;
        options.heads = layer.heads;
        options.threads = threads;
        options.workspace = &workspace;
        ForwardResult block = forward_block(layer.attention, layer.block, BlockKind::Pre,
                                            {x, x, x}, causal, options,
                                            l == traced_layer ? tracer : quiet);
        x = std::move(block.output);
        result.weights.push_back(std::move(block.weights));
        if (l == traced_layer) continue;
        report(tracer, [&] {  // an untraced layer: its block in one step
            return make_step(StepKind::Layer, 0, "block", "x", "x = layers[" + std::to_string(l) + "](x)",
                             model_dims, x);
        });
    }
    const Tensor final_norm = layer_norm(x, m.norm_weight, m.norm_bias);
    result.output = x;
    report(tracer, [&] {
        return make_step(StepKind::Norm, 22, "layer_norm", "x_final", "x_final = norm(x)", model_dims, final_norm);
    });
    result.logits = project(final_norm, m.head_weight, m.head_bias, threads);
    report(tracer, [&] {
        return make_step(StepKind::Logits, 23, "project", "logits", "logits = x_final @ lm_head.T + b", {"B", "N", "V"},
                         result.logits,
                         std::uint64_t(tokens.size()) * m.vocab_size() * m.d_model());
    });
    return result;
}

}  // namespace mha
