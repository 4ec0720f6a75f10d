#pragma once
// The transformer block's backward (core/forms/block.h), pre- and post-LN: its own steps'
// adjoints (core/backward: LayerNorm, GELU, the residual; linear_backward) in reverse, around
// attention's backward.

#include <string>

#include "core/backward/backward.h"
#include "core/backward/linear_backward.h"
#include "core/forms/block.h"
#include "core/layers/layer_norm.h"

namespace mha {

// What a linear layer's backward calls things in the trace: the weight W (out_dim, in_dim),
// the layer's input x and the gradient dy at its output; dw, db and dx, the gradients'.
struct LinearNames {
    std::string w, x, dy, dw, db, dx, out_dim, in_dim;
};

// linear_backward of y = x Wᵀ + b (with a bias) over dy (B, N, out), shown as step `number`'s
// "dw = dy.T @ x", "db = dy.sum((0, 1))" and "dx = dy @ W".
LinearGrads traced_linear_backward(int number, const LinearNames& names, const Tensor& x,
                                   const Tensor& w, const Tensor& dy, std::size_t threads,
                                   Workspace* workspace, PassTrace& trace);

// layer_norm_backward of `norm` (gamma (d_model)) at x (B, N, d_model) over d_norm (named dy),
// shown as step `number`'s d<norm>.weight, d<norm>.bias and the gradient `out` at x.
LayerNormGrads traced_norm_backward(int number, const std::string& norm, const std::string& dy,
                                    const std::string& out, const Tensor& x, const Tensor& gamma,
                                    const Tensor& d_norm, std::size_t threads, Workspace* workspace,
                                    PassTrace& trace);

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

// The block's backward alone, after forward_block ran on `trace` keeping `kept`: the
// gradients of L = Σ output ∘ grad_output (grad_output (B, N, d_model)), traced as the trace's
// next steps. attention_weights is the
// forward's P (ForwardResult::weights); masks and options are the forward's.
BlockGradients block_backward(const Weights& attention, const BlockWeights& block, BlockKind kind,
                              const Masks& masks, const ForwardOptions& options,
                              const BlockKept& kept, const Tensor& attention_weights,
                              const Tensor& grad_output, PassTrace& trace);

// The block's forward (traced as forward_block traces it), keeping BlockKept, then the
// backward of L = Σ output ∘ grad_output (grad_output (B, N, d_model)), traced on the same
// trace, b21 down to b15 with
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
