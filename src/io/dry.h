#pragma once
// The pass's weights and inputs with shapes and no values (Tensor::shape_only): what a dry run
// runs on, in the very shapes seeded_weights and seeded_inputs (io/init.h) draw.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/forms/block.h"
#include "core/forms/model.h"
#include "core/pass/attention.h"
#include "core/pass/mla.h"
#include "core/sizes.h"
#include "io/model_init.h"

namespace mha {

// The same weights and inputs (layouts, which tensors are one) without their values.
Weights without_values(const Weights& weights);
BlockWeights without_values(const BlockWeights& weights);
MlaWeights without_values(const MlaWeights& weights);
Inputs without_values(const Inputs& inputs);
Model without_values(const Model& model);

// W_q (q_width, d_model), W_k and W_v (kv_width, d_model), W_o (d_model, q_width), and the four
// biases when `bias`; QK-norm's (d_k) weights when `qk_norm`.
Weights dry_weights(const Sizes& sizes, bool bias, bool qk_norm);

// The block's norms (d_model), linear1 (d_ff, d_model) and linear2 (d_model, d_ff) with biases.
BlockWeights dry_block(std::size_t d_model, std::size_t d_ff);

// MLA's five matrices and the latent's norm in the shapes of `sizes`.
MlaWeights dry_mla_weights(const MlaSizes& sizes);

// x (B, N, d_model) playing query, key and value, or x_q with one memory (B, M, kdim) as key
// and value (a separate x_v (B, M, vdim) when vdim differs), as seeded_inputs makes them.
Inputs dry_inputs(const Sizes& sizes, bool self_attention);

// The character model over vocab (V code points) in the shapes seeded_model (io/model_init.h)
// draws: the embeddings, every layer's attention (biased) and block, the final norm, the head.
Model dry_model(const std::vector<std::uint32_t>& vocab, const ModelSizes& sizes);

}  // namespace mha
