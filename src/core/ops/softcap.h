#pragma once
// Gemma 2's logit soft-capping: a smooth bound on the scores, |C·tanh(s/C)| < C.

#include <cstddef>

namespace mha {

// values[i] = cap · tanh(values[i] / cap), in double; cap > 0.
void softcap(float* values, std::size_t count, double cap);

}  // namespace mha
