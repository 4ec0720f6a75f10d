// The character model's forward pass: embeddings, the blocks, the final norm and the head.

#include "core/forms/model.h"

#include "core/error.h"
#include "core/layers/embedding.h"
#include "core/layers/layer_norm.h"
#include "core/ops/block_ops.h"
#include "core/pass/describe.h"
#include "core/pass/projection.h"
#include "core/tensor/workspace.h"

namespace mha {

std::size_t Model::parameter_count() const {
    std::size_t count = token_embedding.numel() + position_embedding.numel() + norm_weight.numel() +
                        norm_bias.numel() + head_weight.numel() + head_bias.numel();
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
    PassTrace trace(tracer);
    // each layer's attention reuses the memory of the one before; a dry model's counts its peak
    Workspace workspace = m.token_embedding.dry() ? Workspace::dry() : Workspace();
    Tensor x = embed(m.token_embedding, m.position_embedding, tokens, 1, &workspace);
    check_in_float32(x, "the embeddings (token_embedding[t] + position_embedding)");
    trace.show(x, [&] {  // (1, N, d_model)
        return described(StepKind::Embed, 0, "embed", "x",
                         "x = token_embedding[t] + position_embedding[:N]", model_dims);
    });
    Masks causal;
    causal.causal = true;
    ModelResult result;
    NullTracer quiet;
    PassTrace untraced(quiet);
    for (std::size_t l = 0; l < m.layers.size(); ++l) {
        const ModelLayer& layer = m.layers[l];
        ForwardOptions options;
        options.heads = layer.heads;
        options.threads = threads;
        options.workspace = &workspace;
        ForwardResult block = forward_block(layer.attention, layer.block, BlockKind::Pre, {x, x, x},
                                            causal, options, l == traced_layer ? trace : untraced);
        x = std::move(block.output);
        result.weights.push_back(std::move(block.weights));
        if (l == traced_layer) continue;
        trace.show(x, [&] {  // an untraced layer: its block in one step
            return described(StepKind::Layer, 0, "block", "x",
                             "x = layers[" + std::to_string(l) + "](x)", model_dims);
        });
    }
    const Tensor final_norm = layer_norm(x, m.norm_weight, m.norm_bias, threads, &workspace);
    result.output = x;
    trace.show(final_norm, [&] { return norm_step(22, "x_final", "norm", "x", m.d_model()); });
    result.logits = project(final_norm, m.head_weight, m.head_bias, threads, &workspace);
    trace.show(result.logits, [&] {  // (1, N, V)
        return described(StepKind::Logits, 23, "project", "logits",
                         "logits = x_final @ lm_head.T + b", {"B", "N", "V"},
                         macs_of({x.size(0), x.size(1), m.vocab_size(), m.d_model()}));
    });
    return result;
}

}  // namespace mha
