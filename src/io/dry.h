#pragma once
// The pass's weights and inputs with shapes and no values (Tensor::shape_only): what a dry run
// runs on, in the very shapes seeded_weights and seeded_inputs (io/init.h) draw.

#include <cstddef>

#include "core/pass/attention.h"
#include "core/pass/mla.h"
#include "core/sizes.h"

namespace mha {

// W_q (q_width, d_model), W_k and W_v (kv_width, d_model), W_o (d_model, q_width), and the four
// biases when `bias`; QK-norm's (d_k) weights when `qk_norm`.
Weights dry_weights(const Sizes& sizes, bool bias, bool qk_norm);

// x (B, N, d_model) playing query, key and value, or x_q with one memory (B, M, kdim) as key
// and value (a separate x_v (B, M, vdim) when vdim differs), as seeded_inputs makes them.
Inputs dry_inputs(const Sizes& sizes, bool self_attention);

// MLA's q_proj, kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj and o_proj, in the shapes
// seeded_mla_weights draws.
MlaWeights dry_mla_weights(const MlaSizes& sizes);

}  // namespace mha
