#pragma once
// The whole forward pass on the plain reference loops of core/ops, one thread,
// nothing traced: the yardstick the fast paths are tested and benchmarked against.

#include "core/attention.h"

namespace mha {

// output (B, N, d_model) and weights (B, h, N, M), as forward() on the standard path.
ForwardResult reference_forward(const Weights& weights, const Inputs& inputs, const Masks& masks,
                                std::size_t heads, bool zero_masked_rows);

}  // namespace mha
