#pragma once
// The whole forward pass on the plain reference loops of core/ops, one thread,
// nothing traced: the yardstick the fast paths are tested and benchmarked against.

#include <optional>

#include "core/pass/attention.h"
#include "core/position/rope.h"

namespace mha {

// output (B, N, d_model) and weights (B, h, N, M), as forward() on the standard path, G = h:
// QK-norm when the weights have q_norm, RoPE when given, and the masks' soft-cap, ALiBi and
// window with its sinks.
ForwardResult reference_forward(const Weights& weights, const Inputs& inputs, const Masks& masks,
                                std::size_t heads, bool zero_masked_rows,
                                const std::optional<Rope>& rope = std::nullopt);

}  // namespace mha
