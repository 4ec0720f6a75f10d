#pragma once
// GELU in its exact erf form (nn.GELU(), F.gelu without approximate="tanh", the form the block
// uses) and its adjoint, element-wise: float32 on vector lanes as PyTorch's CPU kernel computes
// it, and double through the C library's erf and exp for finite-difference checks. The tensor
// forms return shape-only results on dry operands (a dry run).

#include <cstddef>

#include "core/tensor/tensor.h"
#include "core/tensor/workspace.h"

namespace mha {

// y = GELU(u) = u · Φ(u) = u/2 · (1 + erf(u/√2)).   u, y: (n)
// float32: erf by polynomials, within 2e-7 of the exact value (core/layers/gelu.cpp);
// double: std::erf.
void gelu_values(const float* u, std::size_t n, float* y);
void gelu_values(const double* u, std::size_t n, double* y);

// du = dy · GELU'(u), GELU'(u) = Φ(u) + u · φ(u), φ(u) = e^(−u²/2)/√(2π), computed as
// gelu_values computes Φ (float32 or double).   u, dy, du: (n)
void gelu_backward_values(const float* u, const float* dy, std::size_t n, float* du);
void gelu_backward_values(const double* u, const double* dy, std::size_t n, double* du);

// gelu_values on a tensor: the block's activation, split over `threads` threads; y from the
// workspace when there is one.
Tensor gelu(const Tensor& u, std::size_t threads = 1, Workspace* workspace = nullptr);

// gelu_backward_values on tensors of one shape, split over `threads` threads; du from the
// workspace when there is one.
Tensor gelu_backward(const Tensor& u, const Tensor& dy, std::size_t threads,
                     Workspace* workspace = nullptr);

}  // namespace mha
