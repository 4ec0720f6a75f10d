#pragma once
// The projections of steps 1-3 and 14, y = x Wᵀ + b, split over threads; the weights packed
// once for the kernels (core/kernels/kernels.h), for passes that repeat over the same weights.

#include <cstdint>
#include <vector>

#include "core/kernels/kernels.h"
#include "core/pass/attention.h"
#include "core/sizes.h"
#include "core/tensor/tensor.h"
#include "core/tensor/workspace.h"

namespace mha {

// W_q, W_k, W_v and W_o packed once for the kernels in use (core/kernels/kernels.h), to be given to
// every pass over the same weights (ForwardOptions::packed): such passes pack no weight again.
// As large as the four weights (each rounded up to a register tile's width of outputs); the
// weights must not change while it is in use.
struct PackedWeights {
    PackedLinear q, k, v, o;
};
PackedWeights pack_weights(const Weights& weights);

// The most bytes pack_weights takes for weights of these sizes (throws mha::Error past 64 bits).
std::uint64_t packed_weights_bytes(const Sizes& sizes);

// x (B, L, in) contiguous -> x Wᵀ + b (B, L, out): the projections of steps 1-3 and 14,
// split over threads as project_into splits them; y from the workspace when there is one.
Tensor project(const Tensor& x, const Tensor& w, const Tensor& bias, std::size_t threads,
               Workspace* workspace = nullptr, const PackedLinear* packed = nullptr);

// Every target's y = x Wᵀ + b (core/kernels/kernels.h), x (rows, in) row-major, in one pool
// dispatch: the outputs' panels are cut into parts of at most one group (linear_group_panels),
// which the threads claim one at a time, or, when there are fewer panels than threads, the rows
// are split too; no worker is woken for less than min_shared_macs multiply-adds
// (core/threads/parallel.h).
void project_into(const float* x, std::size_t rows, std::size_t in,
                  const std::vector<LinearTarget>& targets, std::size_t threads);

// y's place in a fused product: y = x Wᵀ + b (y (rows, out) row-major, out = W's rows), W's
// panels from `packed` when given.
LinearTarget linear_target(const Tensor& w, const Tensor& bias, Tensor& y,
                           const PackedLinear* packed);

}  // namespace mha
