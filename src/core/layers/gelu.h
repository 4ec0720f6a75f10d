#pragma once
// GELU in its exact erf form (nn.GELU(), F.gelu without approximate="tanh", the form the block
// uses) and its adjoint, element-wise; templated for float32 and double.

#include <cstddef>

#include "core/tensor/tensor.h"

namespace mha {

// y = GELU(u) = u · Φ(u) = u/2 · (1 + erf(u/√2)), computed in double.   u, y: (n)
template <typename T>
void gelu_values(const T* u, std::size_t n, T* y);

// du = dy · GELU'(u), GELU'(u) = Φ(u) + u · φ(u), φ(u) = e^(−u²/2)/√(2π).   u, dy, du: (n)
template <typename T>
void gelu_backward_values(const T* u, const T* dy, std::size_t n, T* du);

// gelu_values on a contiguous tensor: the block's activation.
Tensor gelu(const Tensor& u);

// gelu_backward_values on contiguous tensors of one shape, split over `threads` threads.
Tensor gelu_backward(const Tensor& u, const Tensor& dy, std::size_t threads);

}  // namespace mha
