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

MlaWeights dry_mla_weights(const MlaSizes& s) {
    const std::size_t h = s.heads, E = s.d_model;
    return {Tensor::shape_only({h * (s.d_nope + s.d_rope), E}),
            Tensor::shape_only({s.d_latent + s.d_rope, E}), Tensor::shape_only({s.d_latent}),
            Tensor::shape_only({h * (s.d_nope + s.d_v), s.d_latent}),
            Tensor::shape_only({E, h * s.d_v})};
}

}  // namespace mha
