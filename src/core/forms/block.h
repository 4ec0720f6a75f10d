#pragma once
// The transformer block around attention: residual connections, two LayerNorms and
// the feed-forward network FFN(y) = GELU(y W_1ᵀ + b_1) W_2ᵀ + b_2, in either order
// nn.TransformerEncoderLayer offers:
//   pre  (norm_first=True):   h = x + Attn(LN_1(x));    out = h + FFN(LN_2(h))
//   post (norm_first=False):  h = LN_1(x + Attn(x));    out = LN_2(h + FFN(h))
// Real checkpoints' blocks are pre-norm blocks of other styles (BlockStyle): RMSNorm for the
// norms, GELU's tanh form or SiLU, a gated feed-forward (SwiGLU, GeGLU), and Gemma's sandwich:
//   h = x + post_attn_norm(Attn(norm1(x)));   out = h + post_ffn_norm(FFN(norm2(h)))

#include <cstdint>
#include <string>

#include "core/kernels/kernels.h"
#include "core/layers/activation.h"
#include "core/pass/attention.h"

namespace mha {

// How the block's norms normalise: nn.LayerNorm (weight and bias) or RMSNorm (weight only:
// x / sqrt(mean(x²) + ε) · weight; Gemma's (1 + w) is given as the weight 1 + w).
enum class NormKind { Layer, Rms };

// What the block computes besides attention; the default is nn.TransformerEncoderLayer's.
struct BlockStyle {
    NormKind norm = NormKind::Layer;
    double rms_eps = 1e-6;  // RMSNorm's ε (LayerNorm's is layer_norm_eps)
    Activation activation = Activation::Gelu;
    bool gated = false;     // FFN(y) = (act(y W_1ᵀ) ∘ y W_upᵀ) W_2ᵀ (SwiGLU, GeGLU): W_1
                            //  is the gate
    bool sandwich = false;  // Gemma 2, 3: post_attn_norm and post_ffn_norm on each branch
                            //  before its residual sum
    bool is_default() const {
        return norm == NormKind::Layer && activation == Activation::Gelu && !gated && !sandwich;
    }
};

struct BlockWeights {
    Tensor norm1_weight, norm1_bias;  // (d_model) each; no biases under RMSNorm
    Tensor norm2_weight, norm2_bias;  // (d_model) each
    Tensor w_1, b_1;                  // (d_ff, d_model), (d_ff)   linear1 (gated: the gate)
    Tensor w_2, b_2;                  // (d_model, d_ff), (d_model) linear2; biases may be empty
    Tensor w_up, b_up;                // (d_ff, d_model), (d_ff)   gated: the up projection
    Tensor post_attn_norm, post_ffn_norm;  // (d_model) each: the sandwich's norms' weights
    BlockStyle style;

    std::size_t d_ff() const { return w_1.size(0); }
    std::size_t parameter_count() const;
};

// The feed-forward's weights packed once for the kernels in use (core/kernels/kernels.h), for
// passes that repeat over the same block: such passes pack none of them again. As large as
// the weights; they must not change while it is in use.
struct PackedFeedForward {
    PackedLinear w_1, w_2;  // linear1 (gated: the gate), linear2
    PackedLinear w_up;      // gated: the up projection; empty otherwise
};
PackedFeedForward pack_feed_forward(const BlockWeights& block);

// What the block's forward keeps for its backward (core/backward/block_backward.h): the input
// of each norm, of attention and of the feed-forward, and the hidden layer before and after
// GELU. All (B, N, d_model) but the last two, (B, N, d_ff).
//                pre-LN          post-LN
//   attn_in      LN_1(x)         x
//   norm1_in     x               x + Attn(x)
//   ffn_in       LN_2(h)         h = LN_1(x + Attn(x))
//   norm2_in     h               h + FFN(h)
struct BlockKept {
    Tensor attn_in, norm1_in, ffn_in, norm2_in;  // (B, N, d_model) each
    Tensor hidden;                               // (B, N, d_ff) u = ffn_in W_1ᵀ + b_1
    Tensor activated;                            // (B, N, d_ff) GELU(u); gated: act(u) ∘ up
    Tensor up;                                   // (B, N, d_ff) gated: ffn_in W_upᵀ
    Tensor post_attn_in, post_ffn_in;  // (B, N, d_model) each, sandwich: each branch before its
                                       //  norm
    Kept attention;                              // what attention's forward kept for its backward
};

// Step `number`, "out = norm(in)": a LayerNorm of (B, N, d_model) rows and its 2·d_model
// parameters (the block's norms and the model's final one).
Step norm_step(int number, const std::string& out, const std::string& norm, const std::string& in,
               std::size_t d_model);

// The same for either kind of norm: RMSNorm's step (ε rms_eps) has d_model parameters.
Step norm_step(int number, const std::string& out, const std::string& norm, const std::string& in,
               std::size_t d_model, NormKind kind, double rms_eps);

// y = norm(x) of x (B, N, d_model) contiguous with weight (d_model) and, for LayerNorm, bias:
// a new tensor (from the workspace when there is one), shape-only on dry operands.
Tensor apply_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, NormKind kind,
                  double rms_eps, std::size_t threads, Workspace* workspace);

// Throws mha::Error naming the tensor when a shape does not fit d_model.
void check_block(const BlockWeights& block, std::size_t d_model);

// Self-attention only. Reports attention's steps 0-14 and the block's own steps 15-21
// (in execution order: pre-LN's first norm, 15, runs before attention). The result's output
// is the block's output; its weights are attention's. On dry weights and inputs (a dry run)
// it computes nothing and describes the same steps.
ForwardResult forward_block(const Weights& attention, const BlockWeights& block, BlockKind kind,
                            const Inputs& inputs, const Masks& masks, const ForwardOptions& options,
                            Tracer& tracer);

// forward_block with its steps shown on a trace the caller started (the model's). A non-null
// `keep` receives what the backward reads; a non-null `packed` gives the feed-forward's weights
// packed once (attention's are options.packed).
ForwardResult forward_block(const Weights& attention, const BlockWeights& block, BlockKind kind,
                            const Inputs& inputs, const Masks& masks, const ForwardOptions& options,
                            PassTrace& trace, BlockKept* keep = nullptr,
                            const PackedFeedForward* packed = nullptr);

}  // namespace mha
