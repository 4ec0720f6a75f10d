#pragma once
// Gemma 2's logit soft-capping, a smooth bound on the scores (|C·tanh(s/C)| < C), and its slope.

#include <cstddef>

namespace mha {

// values[i] = cap · tanh(values[i] / cap), in double; cap > 0.
void softcap(float* values, std::size_t count, double cap);

// Its derivative: slopes[j] = 1 − tanh²(raw[j] · factor / cap) at each of `count` scores given
// as raw products q·k (scaled as scale_mask_tile scales them), cap > 0.
void softcap_slopes(const float* raw, std::size_t count, float factor, double cap, float* slopes);

}  // namespace mha
