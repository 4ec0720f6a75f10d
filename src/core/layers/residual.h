#pragma once
// The residual connection out = x + f(x) and its adjoint: the sum hands dOut unchanged to
// both of its branches, and x, read by both, gets the two gradients summed.

#include <cstddef>

#include "core/tensor/tensor.h"
#include "core/tensor/workspace.h"

namespace mha {

// ∂L/∂x for out = x + f(x): d_out (the skip path's gradient, as the sum passes it on) plus
// d_branch (∂L/∂x through f, computed from d_out), on `threads` threads, from the workspace
// when there is one.
//   d_out, d_branch: (..., d_model)
Tensor residual_backward(const Tensor& d_out, const Tensor& d_branch, std::size_t threads,
                         Workspace* workspace = nullptr);

}  // namespace mha
