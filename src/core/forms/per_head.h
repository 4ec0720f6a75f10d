#pragma once
// The per-head form the papers write: head_i = Attention(x W_Q^i, x W_K^i, x W_V^i) with
// W_Q^i of shape (d_model, d_k), output = Concat(head_0, ..., head_{h-1}) W_O. Here each
// W_Q^i is rows i·d_k .. (i+1)·d_k of the packed W_q (PyTorch's (out, in) layout, so the
// paper's W_Q^i is its transpose). The packed form, forward(), is what code does; the two
// are equal.

#include "core/pass/attention.h"

namespace mha {

// Rows [first, first + count) of a weight (rows, in) or a bias (rows), as a copy; empty stays
// empty.
Tensor row_slice(const Tensor& t, std::size_t first, std::size_t count);

// forward() one head at a time, traced per head: Q_i, K_i, V_i (B, L, d_k), scores_i and
// weights_i (B, N, M), head_i (B, N, d_k), then the concatenation and W_o. Steps 6-10 run
// on the packed pass's units, so every mask, option and path works as in forward().
ForwardResult forward_per_head(const Weights& weights, const Inputs& inputs, const Masks& masks,
                               const ForwardOptions& options, Tracer& tracer);

// The same on a trace the caller started (the backward's steps may follow). With
// options.keep, what the backward reads is kept in the packed form's layout (Kept).
ForwardResult forward_per_head(const Weights& weights, const Inputs& inputs, const Masks& masks,
                               const ForwardOptions& options, PassTrace& trace);

}  // namespace mha
