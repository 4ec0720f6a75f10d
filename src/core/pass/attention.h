#pragma once
// Multi-head attention: the weights and the forward pass as 14 numbered steps,
// each reported to a Tracer (see docs/walkthrough.md for the maths).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/kernels/kernels.h"
#include "core/ops/masks.h"
#include "core/pass/form.h"
#include "core/pass/step.h"
#include "core/pass/trace.h"
#include "core/pass/units.h"
#include "core/position/rope.h"
#include "core/sizes.h"
#include "core/tensor/tensor.h"
#include "core/tensor/workspace.h"

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
    Tensor w_g;  // (h·d_v, d_model) element-wise or (h, d_model) head-wise: the output gate
                 //  (--gate), sigmoid(x_q W_gᵀ + b_g) times the concat; empty without it
    Tensor b_g;  // (h·d_v) or (h); empty without a gate or without its bias

    std::size_t d_model() const { return w_q.size(1); }
    std::size_t q_width() const { return w_q.size(0); }  // h·d_k
    std::size_t kdim() const { return w_k.size(1); }
    std::size_t vdim() const { return w_v.size(1); }
    std::size_t kv_width() const { return w_k.size(0); }  // G·d_k
    bool any_bias() const { return !(b_q.empty() && b_k.empty() && b_v.empty() && b_o.empty()); }
    bool gated() const { return !w_g.empty(); }
    std::size_t parameter_count() const;
};

struct Inputs {
    Tensor x_q;  // (B, N, d_model)  queries
    Tensor x_k;  // (B, M, kdim)     keys     (self-attention: the same tensor as x_q)
    Tensor x_v;  // (B, M, vdim)     values

    // One tensor plays query, key and value.
    bool self_attention() const {
        return x_k.shares_storage_with(x_q) && x_v.shares_storage_with(x_q);
    }
};

struct PackedWeights;  // core/pass/projection.h

// What the forward keeps for the backward (ForwardOptions::keep): the tensors the adjoints of
// steps 5-14 read. The inputs are the caller's, the weights P are ForwardResult::weights.
struct Kept {
    Tensor q_raw, k_raw;  // (B, h, N, d_k), (B, G, M, d_k): Q and K before QK-norm; empty
                          //  without it
    Tensor q, k, v;       // (B, h, N, d_k), (B, G, M, d_k), (B, G, M, d_v): what 6 and 10 read
    Tensor context;       // (B, h, N, d_v) O: what 10 wrote
    Tensor lse;           // (B, h, N) the streaming path's row log-sum-exp, kept instead of P
    Tensor concat;        // (B, N, h·d_v): what 14 read (gated, with a gate)
    Tensor gate;          // (B, N, h·d_v) or (B, N, h): sigmoid(x_q W_gᵀ + b_g), what 13 multiplied
                          //  the concat by; empty without a gate
    Tensor x_q;           // (B, N, d_model): what the gate read; empty without a gate
};

struct ForwardOptions {
    std::size_t heads = 1;
    std::size_t threads = 1;        // workers for the (batch, head) units and projections
    bool zero_masked_rows = false;  // a row with every key blocked: zeros instead of NaN
    bool scale = true;              // false (--no-scale): step 7 leaves the scores as they are
    double scale_base = 0.0;        // S > 0: step 7 divides by sqrt(S) instead of sqrt(d_k)
    std::optional<std::size_t> ablate_head;  // zero this head's context before W_o (step 13)
    AttentionPath path = AttentionPath::Standard;
    std::optional<Rope> rope;    // RoPE on Q and K after step 5 (after QK-norm)
    double qk_norm_eps = 1e-6;   // QK-norm's RMSNorm ε (rms_norm_eps)
    bool add_zero_attn = false;  // a zero key and value appended after bias_k, bias_v (if any)
    std::optional<std::size_t> flash_row;  // streaming, traced: this query row of batch 0, head 0
                                           // tile by tile (core/pass/flash_row.h)
    Workspace* workspace = nullptr;  // the pass's tensors come from it (a repeated pass reuses
                                     // its memory); null: fresh memory
    const PackedWeights* packed = nullptr;  // the weights packed once (pack_weights), read by
                                            // steps 1-3 and 14; null: packed in every pass
    Kept* keep = nullptr;  // filled with what the backward reads; null: nothing kept, Q, K and V
                           // freed before step 11
};

struct ForwardResult {
    Tensor output;                      // (B, N, d_model)
    Tensor weights;                     // (B, h, N, M)  attention weights per head; empty
                                        //               on the streaming path
    std::size_t fully_masked_rows = 0;  // (b, h, n) rows that had no key left to attend to
    std::vector<std::pair<std::string, Tensor>> cache;  // --kv-quant: the cache's tensors, named
                                                        // as --save writes them
};

// The key/value positions appended after the projections, as nn.MultiheadAttention's
// add_bias_kv (bias_k, bias_v) and add_zero_attn (zeros) append them.
AppendedKv appended_kv(const Weights& weights, const ForwardOptions& options);

// The masks for M + extra keys: attn_mask and key_padding_mask padded with columns of
// zeros, which block nothing, as PyTorch pads them. The causal rule (core/ops/ops.h) has no
// place for the appended positions: check_pass refuses it.
Masks with_appended_keys(const Masks& masks, std::size_t extra);

ForwardResult forward(const Weights& weights, const Inputs& inputs, const Masks& masks,
                      const ForwardOptions& options, Tracer& tracer);

// forward, its steps 0-14 shown on a trace the caller started (the block's, the model's).
ForwardResult forward(const Weights& weights, const Inputs& inputs, const Masks& masks,
                      const ForwardOptions& options, PassTrace& trace);

// Q, K and V split into heads, as steps 1-5 leave them.
struct HeadTensors {
    Tensor q;  // (B, h, N, d_k)
    Tensor k;  // (B, G, M, d_k)
    Tensor v;  // (B, G, M, d_v)  d_v = d_k except in MLA
};

// Steps 6-14 from heads made another way (e.g. a fused QKV projection), traced with the
// trace the caller started. Takes the heads by value so that Q, K and V can be freed once
// step 10 is done. x_q (B, N, d_model), named x_name, is the query input the gate (13) reads:
// needed with a gate (weights.w_g), else unread.
ForwardResult forward_from_heads(const Weights& weights, HeadTensors heads, const Masks& masks,
                                 const Sizes& sizes, const ForwardOptions& options,
                                 PassTrace& trace, const Tensor& x_q = Tensor(),
                                 const std::string& x_name = "x");

UnitMath unit_math(const Sizes& sizes, const ForwardOptions& options);

// Step 0: the inputs, named x when one tensor plays query, key and value.
void show_inputs(const Inputs& inputs, PassTrace& trace);

// QK-norm, then RoPE, on the heads as step 5 leaves them, in place and traced as step 5:
// Q (..., N, d_k) from position first_query (M − N), K (..., M, d_k) from first_key (0, or t
// for a cache's new row), named Q<id> and K<id> ("_3" for head 3 of the per-head form).
// Nothing happens without either.
void position_heads(const Weights& weights, Tensor& q, Tensor& k, std::size_t first_query,
                    std::size_t first_key, const ForwardOptions& options, PassTrace& trace,
                    const std::string& id);

// 13, gated (w.w_g; Qiu et al. 2025, Qwen3-Next's attn_output_gate): concat (B, N, h·d_v) *
// sigmoid(x W_gᵀ + b_g), the gate (B, N, h·d_v) element-wise or (B, N, h) one per head, broadcast
// over the head's d_v columns; x (B, N, d_model) is the query input, named `x` in the trace.
// Returns the gated concat, a new tensor, and the gate in *kept_gate when asked; concat itself
// without a gate. Throws mha::Error when W_g fits neither layout.
Tensor gate_concat(const Weights& weights, const Tensor& x, const std::string& x_name,
                   const Tensor& concat, std::size_t heads, const ForwardOptions& options,
                   PassTrace& trace, Tensor* kept_gate = nullptr);

// Head ablation: context (B, h, N, d_v), any strides, with head `head`'s slices set to 0.
void zero_head(Tensor& context, std::size_t head);

}  // namespace mha
