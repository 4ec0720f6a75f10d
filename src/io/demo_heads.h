#pragma once
// Demo heads: attention weights constructed, not trained, so that on --text input
// (token embedding in the first half of d_model, sinusoidal positions in the second)
// each of four heads shows one pattern that trained heads are known for:
//   head 0  previous token   query i attends to key i-1
//   head 1  first token      every query attends to key 0 (the "sink")
//   head 2  same token       query i attends to the earliest key with its token
//   head 3  even             every query spreads evenly over the keys it may see
// They are meant for causal self-attention; docs/demo_heads.md derives each one.

#include "core/pass/attention.h"

#include <string>
#include <vector>

namespace mha {

inline constexpr std::size_t demo_head_count = 4;
inline constexpr std::size_t demo_min_d_model = 256;

// One short name per head, in head order.
const std::vector<std::string>& demo_head_names();

// The weights for a sentence of `positions` tokens (the gains depend on its length).
// Throws mha::Error unless heads == 4 and d_model is a multiple of 4, at least 256.
Weights demo_weights(std::size_t d_model, std::size_t heads, std::size_t positions);

}  // namespace mha
