#pragma once
// The backward of the MLA form (--form mla): the shared steps' backward (b14-b6) on the heads
// MLA assembled, then MLA's own steps in reverse, down to x and every MLA weight.

#include "core/backward/backward.h"
#include "core/pass/mla.h"

namespace mha {

// The MLA form's forward (naive, with the absorbed cross-check), keeping what the backward
// needs, then the backward of L = Σ output ∘ grad_output (B, N, d_model) for x (B, N, d_model)
// and every weight, both traced on one trace. grads.input is ∂L/∂x, grads.mla holds ∂L/∂
// q_proj, kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj and o_proj; grads.params stays empty.
BackwardResult forward_backward_mla(const MlaWeights& weights, const Tensor& x, const Masks& masks,
                                    const ForwardOptions& options, const Tensor& grad_output,
                                    Tracer& tracer);

}  // namespace mha
