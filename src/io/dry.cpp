// The pass's weights and inputs with shapes and no values.

#include "io/dry.h"

namespace mha {

Weights dry_weights(const Sizes& s, bool bias, bool qk_norm) {
    const std::size_t q = s.inner(), kv = s.kv_heads * s.d_k(), E = s.d_model;
    Weights w;
    w.w_q = Tensor::shape_only({q, E});
    w.w_k = Tensor::shape_only({kv, s.kdim});
    w.w_v = Tensor::shape_only({kv, s.vdim});
    w.w_o = Tensor::shape_only({E, q});
    if (bias) {
        w.b_q = Tensor::shape_only({q});
        w.b_k = Tensor::shape_only({kv});
        w.b_v = Tensor::shape_only({kv});
        w.b_o = Tensor::shape_only({E});
    }
    if (qk_norm) {
        w.q_norm = Tensor::shape_only({s.d_k()});
        w.k_norm = Tensor::shape_only({s.d_k()});
    }
    return w;
}

Inputs dry_inputs(const Sizes& s, bool self_attention) {
    const Tensor x = Tensor::shape_only({s.batch, s.seq_len, s.d_model});
    if (self_attention) return {x, x, x};
    const Tensor memory = Tensor::shape_only({s.batch, s.kv_len, s.kdim});
    if (s.vdim == s.kdim) return {x, memory, memory};
    return {x, memory, Tensor::shape_only({s.batch, s.kv_len, s.vdim})};
}

BlockWeights dry_block(std::size_t E, std::size_t F) {
    BlockWeights w;
    for (Tensor* vector : {&w.norm1_weight, &w.norm1_bias, &w.norm2_weight, &w.norm2_bias, &w.b_2})
        *vector = Tensor::shape_only({E});
    w.w_1 = Tensor::shape_only({F, E});
    w.b_1 = Tensor::shape_only({F});
    w.w_2 = Tensor::shape_only({E, F});
    return w;
}

Model dry_model(const std::vector<std::uint32_t>& vocab, const ModelSizes& s) {
    const std::size_t V = vocab.size(), E = s.d_model;
    Model m;
    m.vocab = vocab;
    m.token_embedding = Tensor::shape_only({V, E});
    m.position_embedding = Tensor::shape_only({s.context, E});
    const Sizes layer{1, s.context, s.context, E, E, E, s.heads, s.heads, E / s.heads};
    for (std::size_t l = 0; l < s.layers; ++l)
        m.layers.push_back({dry_weights(layer, true, false), dry_block(E, s.d_ff), s.heads});
    m.norm_weight = Tensor::shape_only({E});
    m.norm_bias = Tensor::shape_only({E});
    m.head_weight = Tensor::shape_only({V, E});
    m.head_bias = Tensor::shape_only({V});
    return m;
}

}  // namespace mha
