// The pass's weights and inputs with shapes and no values.

#include "io/dry.h"

namespace mha {

Weights without_values(const Weights& w) {
    Weights d = w;
    for (Tensor* t : {&d.w_q, &d.w_k, &d.w_v, &d.w_o, &d.b_q, &d.b_k, &d.b_v, &d.b_o, &d.q_norm,
                      &d.k_norm, &d.bias_k, &d.bias_v, &d.w_g, &d.b_g})
        *t = t->without_values();
    return d;
}

BlockWeights without_values(const BlockWeights& w) {
    BlockWeights d = w;
    for (Tensor* t : {&d.norm1_weight, &d.norm1_bias, &d.norm2_weight, &d.norm2_bias, &d.w_1,
                      &d.b_1, &d.w_2, &d.b_2, &d.w_up, &d.b_up, &d.post_attn_norm,
                      &d.post_ffn_norm})
        *t = t->without_values();
    return d;
}

MlaWeights without_values(const MlaWeights& w) {
    MlaWeights d = w;
    for (Tensor* t : {&d.w_q, &d.w_kv_a, &d.kv_norm, &d.w_kv_b, &d.w_o}) *t = t->without_values();
    return d;
}

Model without_values(const Model& m) {
    Model d = m;
    for (Tensor* t : {&d.token_embedding, &d.position_embedding, &d.norm_weight, &d.norm_bias,
                      &d.head_weight, &d.head_bias})
        *t = t->without_values();
    for (ModelLayer& layer : d.layers)
        layer = {without_values(layer.attention), without_values(layer.block), layer.heads,
                 layer.options};
    return d;
}

Inputs without_values(const Inputs& in) {
    return {in.x_q.without_values(), in.x_k.without_values(), in.x_v.without_values()};
}

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

BlockWeights dry_block(std::size_t d_model, std::size_t d_ff) {
    BlockWeights w;
    w.norm1_weight = w.norm2_weight = Tensor::shape_only({d_model});
    w.norm1_bias = w.norm2_bias = Tensor::shape_only({d_model});
    w.w_1 = Tensor::shape_only({d_ff, d_model});
    w.b_1 = Tensor::shape_only({d_ff});
    w.w_2 = Tensor::shape_only({d_model, d_ff});
    w.b_2 = Tensor::shape_only({d_model});
    return w;
}

MlaWeights dry_mla_weights(const MlaSizes& s) {
    const std::size_t h = s.heads;
    MlaWeights w;
    w.w_q = Tensor::shape_only({h * (s.d_nope + s.d_rope), s.d_model});
    w.w_kv_a = Tensor::shape_only({s.d_latent + s.d_rope, s.d_model});
    w.kv_norm = Tensor::shape_only({s.d_latent});
    w.w_kv_b = Tensor::shape_only({h * (s.d_nope + s.d_v), s.d_latent});
    w.w_o = Tensor::shape_only({s.d_model, h * s.d_v});
    return w;
}

Inputs dry_inputs(const Sizes& s, bool self_attention) {
    const Tensor x = Tensor::shape_only({s.batch, s.seq_len, s.d_model});
    if (self_attention) return {x, x, x};
    const Tensor memory = Tensor::shape_only({s.batch, s.kv_len, s.kdim});
    if (s.vdim == s.kdim) return {x, memory, memory};
    return {x, memory, Tensor::shape_only({s.batch, s.kv_len, s.vdim})};
}

Model dry_model(const std::vector<std::uint32_t>& vocab, const ModelSizes& s) {
    const std::size_t V = vocab.size(), E = s.d_model;
    Model m;
    m.vocab = vocab;
    m.token_embedding = Tensor::shape_only({V, E});
    m.position_embedding = Tensor::shape_only({s.context, E});
    const Sizes layer{1, s.context, s.context, E, E, E, s.heads, s.heads, E / s.heads};
    for (std::size_t l = 0; l < s.layers; ++l)
        m.layers.push_back({dry_weights(layer, true, false), dry_block(E, s.d_ff), s.heads, {}});
    m.norm_weight = Tensor::shape_only({E});
    m.norm_bias = Tensor::shape_only({E});
    m.head_weight = Tensor::shape_only({V, E});
    m.head_bias = Tensor::shape_only({V});
    return m;
}

}  // namespace mha
