#pragma once
// The pass's weights and inputs with shapes and no values (Tensor::shape_only): what a dry run
// runs on, in the very shapes seeded_weights and seeded_inputs (io/init.h) draw.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/forms/block.h"
#include "core/forms/model.h"
#include "core/pass/attention.h"
#include "core/sizes.h"
#include "io/model_init.h"

namespace mha {

// W_q (q_width, d_model), W_k and W_v (kv_width, d_model), W_o (d_model, q_width), and the four
// biases when `bias`; QK-norm's (d_k) weights when `qk_norm`.
Weights dry_weights(const Sizes& sizes, bool bias, bool qk_norm);

// x (B, N, d_model) playing query, key and value, or x_q with one memory (B, M, kdim) as key
// and value (a separate x_v (B, M, vdim) when vdim differs), as seeded_inputs makes them.
Inputs dry_inputs(const Sizes& sizes, bool self_attention);

// The block's norm1 and norm2 (d_model) and linear1 (d_ff, d_model), linear2 (d_model, d_ff)
// with their biases, as seeded_block draws them.
BlockWeights dry_block(std::size_t d_model, std::size_t d_ff);

// The character model over vocab (V code points) in the shapes seeded_model (io/model_init.h)
// draws: the embeddings, every layer's attention (biased) and block, the final norm, the head.
Model dry_model(const std::vector<std::uint32_t>& vocab, const ModelSizes& sizes);

}  // namespace mha
