#pragma once
// Multi-head attention: the weights and the forward pass as 14 numbered steps,
// each reported to a Tracer (see docs/walkthrough.md for the maths).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/kernels.h"
#include "core/masks.h"
#include "core/plan.h"
#include "core/rope.h"
#include "core/sizes.h"
#include "core/step.h"
#include "core/tensor.h"
#include "core/workspace.h"

namespace mha {

// PyTorch's nn.Linear layout: weight (out, in), y = x Wᵀ + b.
struct Weights {
    Tensor w_q;  // (h·d_k, d_model)  h·d_k = d_model unless the heads are wider (--head-dim)
    Tensor w_k;  // (G·d_k, kdim)  kdim = d_model unless the state dict says otherwise;
    Tensor w_v;  // (G·d_k, vdim)  G·d_k = d_model unless key/value heads are shared (GQA)
    Tensor w_o;  // (d_model, h·d_k)
    Tensor b_q, b_k, b_v, b_o;  // (h·d_k), (G·d_k), (G·d_k), (d_model); empty without bias
    Tensor q_norm, k_norm;      // (d_k) each: QK-norm's RMSNorm weights; empty without QK-norm
    Tensor bias_k, bias_v;      // (G·d_k) each: add_bias_kv's extra key/value position, empty
                                // without it

    std::size_t d_model() const { return w_q.size(1); }
    std::size_t q_width() const { return w_q.size(0); }   // h·d_k
    std::size_t kdim() const { return w_k.size(1); }
    std::size_t vdim() const { return w_v.size(1); }
    std::size_t kv_width() const { return w_k.size(0); }  // G·d_k
    bool any_bias() const { return !(b_q.empty() && b_k.empty() && b_v.empty() && b_o.empty()); }
    std::size_t parameter_count() const;
};

// W_q, W_k, W_v and W_o packed once for the kernels in use (core/kernels.h), to be given to
// every pass over the same weights (ForwardOptions::packed): such passes pack no weight again.
// As large as the four weights (each rounded up to a register tile's width of outputs); the
// weights must not change while it is in use.
struct PackedWeights {
    PackedLinear q, k, v, o;
};
PackedWeights pack_weights(const Weights& weights);

// The most bytes pack_weights takes for weights of these sizes (throws mha::Error past 64 bits).
std::uint64_t packed_weights_bytes(const Sizes& sizes);

// Multiply-adds of one forward pass: the four projections and both attention products.
std::uint64_t forward_macs(const Sizes& sizes);

// Bytes the forward pass allocates on the given path with the given threads:
// Q, K, V, context, concat, output, the scores (standard only) and every thread's
// scratch, computed without overflow (throws mha::Error past 64 bits).
std::uint64_t forward_bytes(const Sizes& sizes, AttentionPath path, std::size_t threads);

struct Inputs {
    Tensor x_q;  // (B, N, d_model)  queries
    Tensor x_k;  // (B, M, kdim)     keys     (self-attention: the same tensor as x_q)
    Tensor x_v;  // (B, M, vdim)     values

    // One tensor plays query, key and value.
    bool self_attention() const {
        return x_k.shares_storage_with(x_q) && x_v.shares_storage_with(x_q);
    }
};

struct ForwardOptions {
    std::size_t heads = 1;
    std::size_t threads = 1;        // workers for the (batch, head) units and projections
    bool zero_masked_rows = false;  // a row with every key blocked: zeros instead of NaN
    bool scale = true;              // false (--no-scale): step 7 leaves the scores as they are
    double scale_base = 0.0;        // S > 0: step 7 divides by sqrt(S) instead of sqrt(d_k)
    std::optional<std::size_t> ablate_head;  // zero this head's context before W_o (step 13)
    AttentionPath path = AttentionPath::Standard;
    std::optional<Rope> rope;       // RoPE on Q and K after step 5 (after QK-norm)
    bool add_zero_attn = false;  // a zero key and value appended after bias_k, bias_v (if any)
    std::optional<std::size_t> flash_row;  // streaming, traced: this query row of batch 0, head 0
                                           // tile by tile (core/flash_row.h)
    Workspace* workspace = nullptr;  // the pass's tensors come from it (a repeated pass reuses
                                     // its memory); null: fresh memory
    const PackedWeights* packed = nullptr;  // the weights packed once (pack_weights), read by
                                            // steps 1-3 and 14; null: packed in every pass
};

struct ForwardResult {
    Tensor output;                      // (B, N, d_model)
    Tensor weights;                     // (B, h, N, M)  attention weights per head; empty
                                        //               on the streaming path
    std::size_t fully_masked_rows = 0;  // (b, h, n) rows that had no key left to attend to
};

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

// The key/value positions appended after the projections, as nn.MultiheadAttention's
// add_bias_kv (bias_k, bias_v) and add_zero_attn (zeros) append them.
AppendedKv appended_kv(const Weights& weights, const ForwardOptions& options);

// The masks for M + extra keys: attn_mask and key_padding_mask padded with columns of
// zeros, which block nothing, as PyTorch pads them. The causal rule (core/ops.h) has no
// place for the appended positions: check_pass refuses it.
Masks with_appended_keys(const Masks& masks, std::size_t extra);

ForwardResult forward(const Weights& weights, const Inputs& inputs, const Masks& masks,
                      const ForwardOptions& options, Tracer& tracer);

// What forward's plan depends on (check_pass's sizes, M with the appended positions); throws
// as check_pass does.
PassSpec forward_spec(const Weights& weights, const Inputs& inputs, const Masks& masks,
                      const ForwardOptions& options);

// forward, its steps 0-14 shown on a trace the caller started (the block's, the model's):
// the trace's next steps are those of forward_spec's plan.
ForwardResult forward(const Weights& weights, const Inputs& inputs, const Masks& masks,
                      const ForwardOptions& options, PassTrace& trace);

// x (B, L, in) contiguous -> x Wᵀ + b (B, L, out): the projections of steps 1-3 and 14,
// split over threads as project_into splits them; y from the workspace when there is one.
Tensor project(const Tensor& x, const Tensor& w, const Tensor& bias, std::size_t threads,
               Workspace* workspace = nullptr, const PackedLinear* packed = nullptr);

// Every target's y = x Wᵀ + b (core/kernels.h), x (rows, in) row-major, in one pool dispatch:
// the outputs' panels are split over the threads (each thread packs its panels of W once),
// then the rows too when there are fewer panels than threads; no worker is woken for less
// than min_shared_macs multiply-adds (core/parallel.h).
void project_into(const float* x, std::size_t rows, std::size_t in,
                  const std::vector<LinearTarget>& targets, std::size_t threads);

// Q, K and V split into heads, as steps 1-5 leave them.
struct HeadTensors {
    Tensor q;  // (B, h, N, d_k)
    Tensor k;  // (B, G, M, d_k)
    Tensor v;  // (B, G, M, d_v)  d_v = d_k except in MLA
};

// The plan's input: what the plan of a pass with these sizes, masks and options depends on
// (the one mapping from a pass's description to its plan). What the weights and inputs
// decide is left as PassSpec's defaults (every projection has a bias, no QK-norm,
// self-attention, nothing appended) for the caller to set, as the overload below does.
PassSpec pass_spec(const Sizes& sizes, const Masks& masks, const ForwardOptions& options,
                   Form form);

// pass_spec of a pass over these weights and inputs: their biases, QK-norm, the positions
// appended to K and V (sizes.kv_len counts them), whether one tensor plays query, key and value.
PassSpec pass_spec(const Sizes& sizes, const Weights& weights, const Inputs& inputs,
                   const Masks& masks, const ForwardOptions& options, Form form);

// check_shapes, and the rest of what a pass needs: the positional rules' N <= M, an even d_k
// for RoPE, both QK-norm weights, the head to ablate, no causal rule with appended key/value
// positions; throws mha::Error otherwise.
Sizes check_pass(const Weights& weights, const Inputs& inputs, const Masks& masks,
                 const ForwardOptions& options);

// Steps 6-14 from heads made another way (e.g. a fused QKV projection), traced with the
// plan the caller started. Takes the heads by value so that Q, K and V can be freed once
// step 10 is done.
ForwardResult forward_from_heads(const Weights& weights, HeadTensors heads, const Masks& masks,
                                 const Sizes& sizes, const ForwardOptions& options,
                                 PassTrace& trace);

// The unit of work: one (batch, head) pair of steps 6-10, what it reads and where it writes.
struct AttentionUnit {
    MatrixView q;        // (N, d_k)
    MatrixView k, v;     // (M, d_k), (M, d_v): the key/value head this query head reads
    HeadMask mask;       // what step 8 adds
    float* scores;       // (N, M) row-major: the scores, then the weights; unused when streamed
    float* context;      // (N, d_v), rows ldc apart
    std::size_t ldc;
    // Where the unit sits, for messages: its batch row, its head, the position of query 0.
    std::size_t batch = 0, head = 0, first_query = 0;
};

// The units of one call: unit(u) for u < count, run over threads in any order.
struct Units {
    std::size_t count;
    std::function<AttentionUnit(std::size_t)> unit;
};

// What steps 7 and 9 do to every unit.
struct UnitMath {
    float factor;           // step 7: 1/sqrt(d_k) (or 1/sqrt(S)), or 1
    bool zero_masked_rows;  // step 9: a row with every key blocked gets zeros instead of NaN
};

UnitMath unit_math(const Sizes& sizes, const ForwardOptions& options);

// Which part of steps 6-10 run_units does to each unit.
enum class UnitStep {
    Scores,            // 6   scores = q kᵀ
    Scale,             // 7   scores · factor
    Mask,              // 8   + attn_mask, + key padding, causal -inf
    Softmax,           // 9   weights = softmax(scores) over the keys
    ScaleMaskSoftmax,  // 7-9 fused, one pass over each row
    Context,           // 10  context = weights v
    Attend,            // 6-10, 7-9 fused: the untraced standard path
    Streamed,          // 6-10 on tiles with an online softmax; no scores stored
};

// Runs one part of steps 6-10 on every unit; returns the rows with every key blocked
// (counted by Softmax, ScaleMaskSoftmax, Attend and Streamed). Each unit writes only its
// own memory, so every thread count gives the same bits. Scores beyond float32 are never
// taken for masking: a unit whose q·k would pass FLT_MAX while q·k·factor does not forms
// its scores as (q·factor) kᵀ, as PyTorch does (step 6 then holds them scaled and step 7
// leaves them); a score that passes FLT_MAX even scaled is an Error naming its position.
std::size_t run_units(UnitStep step, const Units& units, const UnitMath& math,
                      std::size_t threads);

// QK-norm, then RoPE, on the heads as step 5 leaves them, in place and traced as step 5:
// Q (..., N, d_k) from position first_query (M − N), K (..., M, d_k) from first_key (0, or t
// for a cache's new row). Nothing happens without either.
void position_heads(const Weights& weights, Tensor& q, Tensor& k, std::size_t first_query,
                    std::size_t first_key, const ForwardOptions& options, PassTrace& trace);

// Head ablation: context (B, h, N, d_v), any strides, with head `head`'s slices set to 0.
void zero_head(Tensor& context, std::size_t head);

}  // namespace mha
