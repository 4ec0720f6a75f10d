#pragma once
// MLA as a form of the pass (--form mla): its plan's spec, and the traced run that computes
// both forms of core/mla.h and hands their tensors to the plan's steps.

#include <cstddef>

#include "core/attention.h"
#include "core/mla.h"
#include "core/plan.h"
#include "core/rope.h"

namespace mha {

// The spec of B sequences of N tokens through MLA of these sizes, causal or not, with RoPE
// (half layout in DeepSeek-V2) on the decoupled q_pe and k_pe.
PassSpec mla_spec(const MlaSizes& sizes, std::size_t batch, std::size_t seq_len, bool causal,
                  const Rope& rope);

// x (B, N, d_model) through both forms, traced; the result is the naive form's output
// (B, N, d_model) and weights (B, h, N, N). The absorbed form's steps note how far it lies
// from the naive one.
ForwardResult forward_mla(const MlaWeights& weights, const Tensor& x, std::size_t heads,
                          bool causal, const Rope& rope, Tracer& tracer);

}  // namespace mha
