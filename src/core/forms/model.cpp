// The language model's forward pass: embeddings, the blocks, the final norm and the head.

#include "core/forms/model.h"

#include <algorithm>

#include "core/error.h"
#include "core/layers/embedding.h"
#include "core/ops/block_ops.h"
#include "core/ops/softcap.h"
#include "core/pass/describe.h"
#include "core/pass/projection.h"
#include "core/tensor/workspace.h"

namespace mha {

namespace {

// Step 0: x_0 (1, N, d_model) from the token (and position) embeddings.
Tensor embed_step(const Model& m, const std::vector<std::size_t>& tokens, Workspace& workspace,
                  PassTrace& trace) {
    const bool positions = !m.position_embedding.empty();
    Tensor x = positions ? embed(m.token_embedding, m.position_embedding, tokens, 1, &workspace)
                         : embed_scaled(m.token_embedding, tokens, m.embedding_scale, &workspace);
    const std::string expression =
        positions ? "x = token_embedding[t] + position_embedding[:N]"
                  : "x = token_embedding[t]" +
                        std::string(m.embedding_scale != 1.0f ? " * embedding_scale" : "");
    check_in_float32(x, positions ? "the embeddings (token_embedding[t] + position_embedding)"
                                  : "the embeddings (" + expression.substr(4) + ")");
    trace.show(x, [&] {  // (1, N, d_model)
        return described(StepKind::Embed, 0, "embed", "x", expression, model_dims);
    });
    return x;
}

// Step 23's product: x_final (1, N, d_model) @ the head's rows, whole or in source.head_chunk
// rows at a time, each chunk's columns of the logits (1, N, V) filled in turn.
Tensor head_logits(const Model& m, const ModelSource* source, const Tensor& x_final,
                   std::size_t threads, Workspace& workspace, const PackedModel* packed) {
    if (!source || !source->head_rows || x_final.dry())
        return project(x_final, m.head_weight, m.head_bias, threads, &workspace,
                       packed ? &packed->head : nullptr);
    const std::size_t n = x_final.size(1), V = m.vocab_size(), chunk = source->head_chunk;
    Tensor logits = new_uninitialised(&workspace, {1, n, V});
    for (std::size_t first = 0; first < V; first += chunk) {
        const std::size_t count = std::min(chunk, V - first);
        const Tensor part = project(x_final, source->head_rows(first, count), Tensor(), threads);
        for (std::size_t row = 0; row < n; ++row) {
            std::copy(part.data() + row * count, part.data() + (row + 1) * count,
                      logits.data() + row * V + first);
        }
    }
    return logits;
}

// The final logit soft-cap, C·tanh(logits / C), in place and traced as step 23's end.
void cap_logits(const Model& m, Tensor& logits, PassTrace& trace) {
    if (m.final_softcap <= 0) return;
    if (!logits.dry()) softcap(logits.data(), logits.numel(), m.final_softcap);
    trace.show(logits, [&] {
        Step step = described(StepKind::Logits, 23, "softcap", "logits",
                              "logits = softcap * torch.tanh(logits / softcap)", {"B", "N", "V"});
        step.facts.softcap = m.final_softcap;
        return step;
    });
}

}  // namespace

ForwardOptions layer_options(const ModelLayer& layer, std::size_t threads, Workspace* workspace) {
    ForwardOptions options;
    options.heads = layer.heads;
    options.threads = threads;
    options.workspace = workspace;
    options.rope = layer.options.rope;
    options.scale_base = layer.options.scale_base;
    options.qk_norm_eps = layer.options.qk_norm_eps;
    return options;
}

Masks layer_masks(const ModelLayer& layer) {
    Masks masks;
    masks.causal = true;
    masks.softcap = layer.options.softcap;
    masks.window = layer.options.window;
    return masks;
}

PackedModel pack_model(const std::vector<ModelLayer>& layers, const Tensor& head_weight) {
    PackedModel packed;
    for (const ModelLayer& layer : layers)
        packed.layers.push_back({pack_weights(layer.attention), pack_feed_forward(layer.block)});
    packed.head = pack_linear(head_weight.data(), head_weight.size(0), head_weight.size(1));
    return packed;
}

std::size_t Model::parameter_count() const {
    std::size_t count = token_embedding.numel() + position_embedding.numel() + norm_weight.numel() +
                        norm_bias.numel() + head_weight.numel() + head_bias.numel();
    for (const ModelLayer& layer : layers)
        count += layer.attention.parameter_count() + layer.block.parameter_count();
    return count;
}

ModelResult forward_model(const Model& m, const std::vector<std::size_t>& tokens,
                          std::size_t traced_layer, std::size_t threads, Tracer& tracer,
                          const ModelPass& pass) {
    ModelSource in_memory;
    in_memory.layers = m.layers.size();
    in_memory.layer = [&m](std::size_t l) { return m.layers[l]; };
    return forward_model(m, in_memory, tokens, traced_layer, threads, tracer, pass);
}

ModelResult forward_model(const Model& m, const ModelSource& source,
                          const std::vector<std::size_t>& tokens, std::size_t traced_layer,
                          std::size_t threads, Tracer& tracer, const ModelPass& pass) {
    if (tokens.empty() || tokens.size() > m.context()) {
        throw Error("the model reads 1 to " + std::to_string(m.context()) + " tokens, got " +
                    std::to_string(tokens.size()));
    }
    PassTrace trace(tracer);
    // each layer's attention reuses the memory of the one before; a dry model's counts its peak
    // (in the caller's dry workspace when it gives one)
    const bool dry = m.token_embedding.dry();
    Workspace own = dry ? Workspace::dry() : Workspace();
    Workspace& workspace =
        pass.workspace && pass.workspace->is_dry() == dry ? *pass.workspace : own;
    Tensor x = embed_step(m, tokens, workspace, trace);
    ModelResult result;
    NullTracer quiet;
    PassTrace untraced(quiet);
    for (std::size_t l = 0; l < source.layers; ++l) {
        if (pass.keep_hidden) result.hidden.push_back(x);
        const ModelLayer layer = source.layer(l);
        ForwardOptions options = layer_options(layer, threads, &workspace);
        const PackedLayer* packed = pass.packed ? &pass.packed->layers[l] : nullptr;
        if (packed) options.packed = &packed->attention;
        ForwardResult block =
            forward_block(layer.attention, layer.block, BlockKind::Pre, {x, x, x},
                          layer_masks(layer), options, l == traced_layer ? trace : untraced,
                          nullptr, packed ? &packed->feed_forward : nullptr);
        x = std::move(block.output);
        const bool kept = pass.every_layer_weights || l == traced_layer;
        result.weights.push_back(kept ? std::move(block.weights) : Tensor());
        if (l == traced_layer) continue;
        trace.show(x, [&] {  // an untraced layer: its block in one step
            return described(StepKind::Layer, 0, "block", "x",
                             "x = layers[" + std::to_string(l) + "](x)", model_dims);
        });
    }
    if (pass.keep_hidden) result.hidden.push_back(x);
    const Tensor final_norm = apply_norm(x, m.norm_weight, m.norm_bias, m.final_norm,
                                         m.final_rms_eps, threads, &workspace);
    result.output = x;
    trace.show(final_norm, [&] {
        return norm_step(22, "x_final", "norm", "x", m.d_model(), m.final_norm, m.final_rms_eps);
    });
    result.logits = head_logits(m, &source, final_norm, threads, workspace, pass.packed);
    trace.show(result.logits, [&] {  // (1, N, V)
        return described(StepKind::Logits, 23, "project", "logits",
                         "logits = x_final @ lm_head.T" + bias_suffix(!m.head_bias.empty(), "b"),
                         {"B", "N", "V"},
                         macs_of({x.size(0), x.size(1), m.vocab_size(), m.d_model()}));
    });
    cap_logits(m, result.logits, trace);
    return result;
}

}  // namespace mha
