#pragma once
// The step plan: every step of one forward pass (number, name, tensor, PyTorch
// expression, named dims, shape, strides, contiguity, bytes copied, multiply-adds,
// structured facts) worked out from the sizes and the form alone, with Layout's stride
// arithmetic and no tensor allocated. --shapes-only prints it; the computed pass
// hands the same steps to its tracer with the values attached (PassTrace).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/ops/masks.h"
#include "core/ops/ops.h"
#include "core/pass/form.h"
#include "core/pass/mla.h"
#include "core/pass/step.h"
#include "core/position/rope.h"
#include "core/sizes.h"
#include "core/tensor/tensor.h"

namespace mha {

// Which projections add a bias.
struct Biases {
    bool q = true, k = true, v = true, o = true;
};

// The transformer block around the pass: its order and the feed-forward width d_ff.
struct BlockSpec {
    BlockKind kind = BlockKind::Pre;
    std::size_t d_ff = 0;
};

// Everything the plan depends on besides the sizes.
struct PassSpec {
    Sizes sizes;
    Form form = Form::Packed;
    AttentionPath path = AttentionPath::Standard;
    bool self_attention = true;
    Biases bias;
    Masks masks;        // what steps 7-8 apply; the plan reads their kinds, never their tensors
    bool scale = true;  // step 7 divides by sqrt(d_k)
    double scale_base = 0.0;   // S > 0: by sqrt(S) instead (Gemma 2's query_pre_attn_scalar)
    bool qk_norm = false;      // step 5 RMSNorms Q and K
    std::optional<Rope> rope;  // step 5 rotates Q and K
    AppendedKv appended;
    std::optional<MlaSizes> mla;  // Form::Mla: its sizes (Sizes: B, N = M, h, d_k = d_h + d_R, d_v)
    bool backward = false;  // the backward's steps follow the forward's (core/backward/backward.h)
    std::optional<BlockSpec> block;  // the block's norms, residuals and feed-forward around the
                                     // pass (Form::Packed, self-attention)
};

// The character model (core/forms/model.h): the embedding, every layer (the traced one as its
// whole block, each other as one step), the final norm and the logits.
struct ModelSpec {
    PassSpec layer;          // the traced layer: its attention pass, with its block
    std::size_t layers = 0;  // L
    std::size_t traced = 0;  // the layer traced step by step, < L
    std::size_t vocab = 0;   // V
    std::size_t context = 0;  // the position embedding's rows
    bool backward = false;    // the cross-entropy's backward follows (core/backward/model_backward.h)
};

// Every step the pass reports, in order; Step::value is null.
std::vector<Step> plan_pass(const PassSpec& spec);

// Every step the model reports, in order; Step::value is null.
std::vector<Step> plan_model(const ModelSpec& spec);

// The multiply-adds of the planned steps (throws mha::Error past 64 bits).
std::uint64_t planned_macs(const std::vector<Step>& steps);

// Parameters of the four projections: W_q (h·d_k, d_model), W_o (d_model, h·d_k), W_k (G·d_k,
// kdim), W_v (G·d_k, vdim), and their biases when there are any.
std::uint64_t parameter_count(const Sizes& sizes, bool bias);

// Step 7's factor: 1/sqrt(base), base = d_k or --scale-base S; 1 when the scores are not scaled.
float score_factor(double base, bool scaled);

// What step 7 divides by the square root of: S when given (> 0), else d_k.
double scale_base_of(const Sizes& sizes, double scale_base);

}  // namespace mha
