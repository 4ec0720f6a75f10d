#pragma once
// Rotary position embeddings (RoPE): each head's q and k rotated pair by pair, by an angle
// that grows with the position, in either of the two layouts models use.

#include <cstddef>
#include <utility>
#include <vector>

#include "core/tensor/tensor.h"

namespace mha {

// Which features form the pairs that rotate together:
// Half        (x[i], x[i + d_k/2])  GPT-NeoX, Hugging Face LLaMA ("rotate_half")
// Interleaved (x[2i], x[2i + 1])     RoFormer, Meta's LLaMA (pairs as complex numbers)
enum class RopeLayout { Half, Interleaved };

// How inv_freq is stretched for contexts longer than the model was trained on, as Hugging
// Face's modeling_rope_utils computes it:
// None    inv_freq as it is
// Linear  inv_freq / factor (position interpolation)
// Llama3  Llama 3.1's: wavelengths 2π/inv_freq above original_context / low_freq_factor
//         divided by factor, below original_context / high_freq_factor kept, and in between
//         a blend of the two that moves smoothly from one to the other
enum class RopeScaling { None, Linear, Llama3 };

struct Rope {
    RopeLayout layout = RopeLayout::Half;
    double theta = 10000.0;  // the base T of inv_freq
    RopeScaling scaling = RopeScaling::None;
    double factor = 1.0;            // Linear, Llama3
    double low_freq_factor = 1.0;   // Llama3
    double high_freq_factor = 4.0;  // Llama3
    double original_context = 8192.0;  // Llama3: original_max_position_embeddings
};

// inv_freq[i] = T^(-2i/d_k) for i in [0, d_k/2), or only the first `first_pairs` of them: the
// angle of pair i at position p is p·inv_freq[i].
std::vector<double> rope_inv_freq(std::size_t d_k, double theta,
                                  std::size_t first_pairs = std::size_t(-1));

// rope_inv_freq(d_k, rope.theta, first_pairs) with rope's scaling applied.
std::vector<double> rope_inv_freq(std::size_t d_k, const Rope& rope,
                                  std::size_t first_pairs = std::size_t(-1));

// The features (a, b) of pair i: a' = a cos θ − b sin θ, b' = a sin θ + b cos θ.
std::pair<std::size_t, std::size_t> rope_pair(RopeLayout layout, std::size_t d_k, std::size_t i);

// Rotates every (d_k) row of x (..., L, d_k), any strides, in place; row l is at position
// first_position + l. Angles, sines and products in double, stored as float. d_k must be even.
// inverse: by the opposite angle, the rotation's transpose (what the backward applies to a
// gradient).
void apply_rope(Tensor& x, const Rope& rope, std::size_t first_position, bool inverse = false);

// order[r] = the interleaved layout's feature that the half layout puts at r:
// 0, 2, 4, ..., d_k − 2, 1, 3, ..., d_k − 1. Reordering each head's rows of W_q and W_k (and
// their biases) this way makes --rope half compute what --rope interleaved computes.
std::vector<std::size_t> rope_half_order(std::size_t d_k);

// w (H·d_k, in) or (H·d_k): row r of every head replaced by that head's row order[r].
Tensor reorder_head_rows(const Tensor& w, std::size_t heads, const std::vector<std::size_t>& order);

}  // namespace mha
