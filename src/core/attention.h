#pragma once
// Multi-head attention: the weights and the forward pass as 14 numbered steps,
// each reported to a Tracer (see docs/walkthrough.md for the maths).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/step.h"
#include "core/tensor.h"

namespace mha {

// PyTorch's nn.Linear layout: weight (out, in), y = x Wᵀ + b.
struct Weights {
    Tensor w_q;  // (d_model, d_model)
    Tensor w_k;  // (G·d_k, kdim)  kdim = d_model unless the state dict says otherwise;
    Tensor w_v;  // (G·d_k, vdim)  G·d_k = d_model unless key/value heads are shared (GQA)
    Tensor w_o;  // (d_model, d_model)
    Tensor b_q, b_k, b_v, b_o;  // (d_model) each; empty for a projection without bias

    std::size_t d_model() const { return w_q.size(0); }
    std::size_t kdim() const { return w_k.size(1); }
    std::size_t vdim() const { return w_v.size(1); }
    std::size_t kv_width() const { return w_k.size(0); }  // G·d_k
    bool any_bias() const { return !(b_q.empty() && b_k.empty() && b_v.empty() && b_o.empty()); }
    std::size_t parameter_count() const;
};

// Every size the forward pass depends on.
struct Sizes {
    std::size_t batch;    // B
    std::size_t seq_len;  // N   queries
    std::size_t kv_len;   // M   keys and values
    std::size_t d_model;
    std::size_t kdim;   // features of x_k
    std::size_t vdim;   // features of x_v
    std::size_t heads;  // h
    std::size_t kv_heads;  // G: key/value heads, h for ordinary multi-head attention
};

// Multiply-adds of one forward pass: the four projections and both attention products.
std::uint64_t forward_macs(const Sizes& sizes);

// How steps 6-10 run. Standard stores the (B, h, N, M) scores and weights and
// traces every step; Streaming runs them tile by tile with an online softmax,
// never stores the weights, and traces them as one step (see core/streaming.h).
enum class AttentionPath { Standard, Streaming };

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

// Everything step 8 applies, already in additive form (0 = may attend,
// -inf = blocked, anything else is added to the score as PyTorch does).
struct Masks {
    Tensor attn_mask;                // (N, M), (B, N, M) or (B·h, N, M); empty for none
    Tensor key_padding;              // (B, M); empty for none
    bool causal = false;             // query i sees keys j ≤ i + (M − N): bottom-right aligned
    std::vector<std::string> notes;  // how the given masks were read, for the trace
};

struct ForwardOptions {
    std::size_t heads = 1;
    std::size_t threads = 1;        // workers for the (batch, head) units and projections
    bool zero_masked_rows = false;  // a row with every key blocked: zeros instead of NaN
    bool scale = true;              // false (--no-scale): step 7 leaves the scores as they are
    std::optional<std::size_t> ablate_head;  // zero this head's context before W_o (step 13)
    AttentionPath path = AttentionPath::Standard;
};

struct ForwardResult {
    Tensor output;                      // (B, N, d_model)
    Tensor weights;                     // (B, h, N, M)  attention weights per head; empty
                                        //               on the streaming path
    std::size_t fully_masked_rows = 0;  // (b, h, n) rows that had no key left to attend to
};

// What step 8 applies, in words, for the trace.
std::vector<std::string> mask_notes(const Masks& masks, const Sizes& sizes);

// Step 6's note on the standard path: how many bytes the stored scores take.
std::string standard_path_note(std::uint64_t score_bytes);

// The sizes of a problem; throws mha::Error when weights, inputs and masks disagree
// or d_model is not divisible by heads. G comes from W_k's rows: G·d_k.
Sizes check_shapes(const Weights& weights, const Inputs& inputs, const Masks& masks,
                   std::size_t heads);

ForwardResult forward(const Weights& weights, const Inputs& inputs, const Masks& masks,
                      const ForwardOptions& options, Tracer& tracer);

// x (B, L, in) -> x Wᵀ + b (B, L, out): the projections of steps 1-3 and 14, rows split over threads.
Tensor project(const Tensor& x, const Tensor& w, const Tensor& bias, std::size_t threads);

// Q, K and V split into heads, as steps 1-5 leave them.
struct HeadTensors {
    Tensor q;  // (B, h, N, d_k)
    Tensor k;  // (B, G, M, d_k)
    Tensor v;  // (B, G, M, d_k)
};

// Steps 6-14 from heads made another way (e.g. a fused QKV projection). Takes the
// heads by value so that Q, K and V can be freed once step 10 is done.
ForwardResult forward_from_heads(const Weights& weights, HeadTensors heads,
                                 const Masks& masks, const Sizes& sizes,
                                 const ForwardOptions& options, Tracer& tracer);

}  // namespace mha
