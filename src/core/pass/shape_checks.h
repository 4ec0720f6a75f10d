#pragma once
// Whether weights, inputs, masks and options fit together into one pass; each check throws
// mha::Error saying what was given and what is expected.

#include <cstddef>

#include "core/ops/masks.h"
#include "core/pass/attention.h"
#include "core/pass/form.h"
#include "core/sizes.h"

namespace mha {

// The heads' rules, checked before any weight exists too: d_k = width / h must be whole
// (width: W_q's rows, d_model unless the heads are wider), and G key/value heads must divide
// the h query heads. Throw mha::Error otherwise.
void check_head_width(std::size_t d_model, std::size_t width, std::size_t heads);
void check_kv_heads(std::size_t heads, std::size_t kv_heads);

// What a form needs of the pass: the decode form one causal sequence attending to itself,
// with no attn_mask or key padding; the fused QKV projection self-attention with K and V as
// wide as Q. Throws mha::Error otherwise; the other forms take any pass.
void check_form(Form form, const Sizes& sizes, bool self_attention, const Masks& masks);

// Throws mha::Error when the attn_mask is not (N, M), (B, N, M) or (B·h, N, M), or the key
// padding mask not (B, M).
void check_masks(const Masks& masks, const Sizes& sizes);

// The sizes of a problem; throws mha::Error when weights, inputs and masks disagree
// or d_model is not divisible by heads. G comes from W_k's rows: G·d_k.
Sizes check_shapes(const Weights& weights, const Inputs& inputs, const Masks& masks,
                   std::size_t heads);

// A dry run (x dry) takes its tensors from a dry workspace: an internal mha::Error when the
// options hold none, rather than real memory allocated and kernels run on tensors without
// values.
void check_dry_workspace(const Tensor& x, const ForwardOptions& options);

// check_shapes, and the rest of what a pass needs: the positional rules' N <= M, an even d_k
// for RoPE, both QK-norm weights, the head to ablate, no causal rule with appended key/value
// positions; throws mha::Error otherwise.
Sizes check_pass(const Weights& weights, const Inputs& inputs, const Masks& masks,
                 const ForwardOptions& options);

}  // namespace mha
