#pragma once
// The backward of a linear layer y = x Wᵀ + b: dW = dYᵀ X, db = Σ dY, dX = dY W, each split
// over threads by its output's rows or columns, never by the sum, so every thread count gives
// the same bits.

#include <cstddef>

#include "core/kernels/kernels.h"
#include "core/tensor/tensor.h"
#include "core/tensor/workspace.h"

namespace mha {

// c (n, m) = a (n, k) b (k, m), any strides for a and b, c row-major with rows ldc apart; c's
// rows split over threads when m <= n, else its columns: gemm packs its operands per call, and
// each thread then packs only its share of the larger one (a dW of 64 rows and 256 columns
// packed all 4096 x 256 of b on both threads). Each element is summed in gemm's order, so the
// split changes no bit.
void parallel_gemm(const MatrixView& a, const MatrixView& b, float* c, std::size_t ldc,
                   std::size_t threads);

// dW (out, in) = dYᵀ X: dy (rows, out) and x (rows, in) row-major, summed over the rows.
Tensor linear_weight_grad(const float* dy, const float* x, std::size_t rows, std::size_t out,
                          std::size_t in, std::size_t threads);

// db (out) = Σ_rows dY, each column summed over the rows in order (in double); the columns
// split over `threads` threads.
Tensor linear_bias_grad(const float* dy, std::size_t rows, std::size_t out, std::size_t threads);

// dX (rows, in) = dY W: dy (rows, out) row-major, w (out, in) contiguous; from the workspace
// when there is one.
Tensor linear_input_grad(const float* dy, const Tensor& w, std::size_t rows, std::size_t threads,
                         Workspace* workspace = nullptr);

// The three at once for y = x Wᵀ + b over dy (..., out) and x (..., in), both contiguous with
// the same leading dimensions; dx from the workspace when there is one.
struct LinearGrads {
    Tensor dw;  // (out, in)
    Tensor db;  // (out); empty when the layer has no bias
    Tensor dx;  // (..., in)
};
LinearGrads linear_backward(const Tensor& x, const Tensor& w, bool bias, const Tensor& dy,
                            std::size_t threads, Workspace* workspace = nullptr);

}  // namespace mha
