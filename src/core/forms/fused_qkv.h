#pragma once
// The fused QKV projection GPT-2 uses (its c_attn): one (3·d_model, d_model) matrix
// makes Q, K and V at once; view and permute then split them into heads.

#include "core/pass/attention.h"

namespace mha {

// W_q, W_k and W_v stacked row-wise: (3·d_model, d_model), and the biases: (3·d_model) or empty;
// from the workspace when there is one (dry when the weights are).
Tensor stacked_qkv_weight(const Weights& weights, Workspace* workspace);
Tensor stacked_qkv_bias(const Weights& weights, Workspace* workspace);

// forward() with steps 1-5 done the fused way:
//   1  qkv = x @ W_qkv.T + b_qkv        (B, N, 3·d_model)
//   4  qkv.view(B, N, 3, h, d_k)         no copy
//   5  qkv.permute(2, 0, 3, 1, 4)        (3, B, h, N, d_k), no copy; Q, K, V = qkv[0], qkv[1],
//   qkv[2]
// Self-attention only, with K and V as wide as Q (no --kv-heads, kdim, vdim); throws
// mha::Error otherwise. Equal to forward() on the same weights.
ForwardResult forward_fused_qkv(const Weights& weights, const Inputs& inputs, const Masks& masks,
                                const ForwardOptions& options, Tracer& tracer);

// The same on a trace the caller started (the backward's steps may follow).
ForwardResult forward_fused_qkv(const Weights& weights, const Inputs& inputs, const Masks& masks,
                                const ForwardOptions& options, PassTrace& trace);

}  // namespace mha
