#pragma once
// The transformer block's backward (core/forms/block.h), pre- and post-LN: its own steps'
// adjoints (core/backward: LayerNorm, GELU, the residual; linear_backward) in reverse, around
// attention's backward.

#include "core/backward/backward.h"
#include "core/forms/block.h"

namespace mha {

// The gradients of L = Σ output ∘ grad_output for the block.
struct BlockGradients {
    Tensor input;        // (B, N, d_model) ∂L/∂x (every path: the residual and attention's)
    Weights attention;   // ∂L/∂ attention's weights, each in its own shape
    BlockWeights block;  // ∂L/∂ norm1, norm2, linear1 and linear2, each in its own shape
};

struct BlockBackwardResult {
    ForwardResult forward;  // the block's output; attention's weights
    BlockGradients grads;
};

// The block's backward alone, after forward_block ran on `trace` (a plan with
// PassSpec::backward) keeping `kept`: the gradients of L = Σ output ∘ grad_output
// (grad_output (B, N, d_model)), traced as the plan's next steps. attention_weights is the
// forward's P (ForwardResult::weights); masks and options are the forward's.
BlockGradients block_backward(const Weights& attention, const BlockWeights& block, BlockKind kind,
                              const Masks& masks, const ForwardOptions& options,
                              const BlockKept& kept, const Tensor& attention_weights,
                              const Tensor& grad_output, PassTrace& trace);

// The block's forward (traced as forward_block traces it), keeping BlockKept, then the
// backward of L = Σ output ∘ grad_output (grad_output (B, N, d_model)), traced on the same
// plan (PassSpec::backward; core/pass/plan_block_backward.cpp), b21 down to b15 with
// attention's b14-b0 between:
//   pre:  out = h + FFN(LN_2(h)), h = x + Attn(LN_1(x))
//         dh = dOut + LN_2ᵀ FFNᵀ dOut;  dx = dh + LN_1ᵀ Attnᵀ dh
//   post: out = LN_2(s), s = h + FFN(h), h = LN_1(x + Attn(x))
//         ds = LN_2ᵀ dOut;  dh = ds + FFNᵀ ds;  dx = LN_1ᵀ dh + Attnᵀ LN_1ᵀ dh
// where Attnᵀ is attention's backward on what its forward (inside the block's, run once) kept
// and FFNᵀ is linear2's, GELU's and linear1's adjoints.
// Self-attention, the packed form; throws mha::Error as forward_block and forward_backward do.
BlockBackwardResult block_forward_backward(const Weights& attention, const BlockWeights& block,
                                           BlockKind kind, const Inputs& inputs, const Masks& masks,
                                           const ForwardOptions& options, const Tensor& grad_output,
                                           Tracer& tracer);

}  // namespace mha
