#pragma once
// LayerNorm (nn.LayerNorm, eps 1e-5) and its adjoint, side by side, on rows of E values;
// templated so the same code runs in float32 (the tool) and double (finite differences). The
// tensor forms return shape-only results on dry operands (a dry run).

#include <cstddef>

#include "core/tensor/tensor.h"
#include "core/tensor/workspace.h"

namespace mha {

constexpr float layer_norm_eps = 1e-5f;  // nn.LayerNorm's default

// y = (x − mean) / √(var + eps) · γ + β for each row of x (rows, E); var is biased, as
// nn.LayerNorm's. Mean and variance are accumulated in double, in index order.
//   x, y: (rows, E)   gamma, beta: (E)
template <typename T>
void layer_norm_rows(const T* x, const T* gamma, const T* beta, std::size_t rows, std::size_t E,
                     T* y);

// The adjoint of layer_norm_rows, given dy = ∂L/∂y. With x̂ = (x − mean)·r, r = 1/√(var + eps)
// and g = dy ∘ γ, per row:  dx = r · (g − mean(g) − x̂ · mean(g ∘ x̂));  and over all rows:
// dγ = Σ dy ∘ x̂, dβ = Σ dy. Rows run on `threads` threads; dγ and dβ are summed column by
// column in row order (in double), so every thread count gives the same bits.
//   x, dy, dx: (rows, E)   gamma, dgamma, dbeta: (E)
template <typename T>
void layer_norm_backward_rows(const T* x, const T* gamma, const T* dy, std::size_t rows,
                              std::size_t E, std::size_t threads, T* dx, T* dgamma, T* dbeta);

// layer_norm_rows on a contiguous tensor: each row of x (..., E) normalised, then scaled by
// gamma (E) and shifted by beta (E), the rows split over `threads` threads; y from the
// workspace when there is one. The block's and the model's LayerNorm.
Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                  std::size_t threads = 1, Workspace* workspace = nullptr);

struct LayerNormGrads {
    Tensor x;      // (..., E) ∂L/∂x
    Tensor gamma;  // (E) ∂L/∂weight
    Tensor beta;   // (E) ∂L/∂bias
};

// layer_norm_backward_rows on contiguous tensors: x and dy (..., E), gamma (E); the gradient
// at x from the workspace when there is one.
LayerNormGrads layer_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& dy,
                                   std::size_t threads, Workspace* workspace = nullptr);

}  // namespace mha
