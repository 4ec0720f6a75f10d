#pragma once
// The backward of a linear layer y = x Wᵀ + b: dW = dYᵀ X, db = Σ dY, dX = dY W, each split
// over threads by its output's rows or columns, never by the sum, so every thread count gives
// the same bits.

#include <cstddef>
#include <string>
#include <vector>

#include "core/kernels/kernels.h"
#include "core/pass/step.h"
#include "core/pass/trace.h"
#include "core/tensor/tensor.h"
#include "core/tensor/workspace.h"

namespace mha {

// db (out) = Σ_rows dY, each column summed over the rows in order (in double); the columns
// split over `threads` threads.
Tensor linear_bias_grad(const float* dy, std::size_t rows, std::size_t out, std::size_t threads);

// The three at once for y = x Wᵀ + b over dy (..., out) and x (..., in), both contiguous with
// the same leading dimensions; dx from the workspace when there is one. dW = dYᵀ X (or, when
// out > in, dWᵀ = Xᵀ dY transposed: the same bits) and dX = dY W run at once, each product a
// unit of the threads.
struct LinearGrads {
    Tensor dw;  // (out, in)
    Tensor db;  // (out); empty when the layer has no bias
    Tensor dx;  // (..., in)
};
LinearGrads linear_backward(const Tensor& x, const Tensor& w, bool bias, const Tensor& dy,
                            std::size_t threads, Workspace* workspace = nullptr);

// One layer's operands for the several-layer linear_backward.
struct LinearLayer {
    const Tensor& x;
    const Tensor& w;
    bool bias;
    const Tensor& dy;
};

// Several layers' gradients (the Q, K and V projections) in one call over the threads: all
// their products are its units. Each gradient has the bits of its layer's own call. A layer
// with a dry operand computes nothing: its gradients are shapes (new_dry).
std::vector<LinearGrads> linear_backward(const std::vector<LinearLayer>& layers,
                                         std::size_t threads, Workspace* workspace = nullptr);

// How a projection y = x Wᵀ + b's gradients are named in a trace: dW = dYᵀ X, db = Σ dY,
// dX = dY W ("W_q", "b_q", "dQ", "x", "dx_q"; b is unused without a bias).
struct ProjectionNames {
    Operand operand;
    int number;
    std::string w, b, dy, x, dx;
    Dims dx_dims, w_dims;
};

// A projection's gradients as steps: dW, db (when it has a bias), dX.
void show_linear_grads(const LinearGrads& grads, const ProjectionNames& names, PassTrace& trace);

}  // namespace mha
