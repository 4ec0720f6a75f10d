#pragma once
// The backward pass of attention: the gradients of L = Σ output ∘ grad_output with respect to
// every input and weight, each step described where it is computed (b14 first, b0 last).

#include <optional>

#include "core/pass/attention.h"
#include "core/pass/mla.h"

namespace mha {

// The gradients of the scalar L = Σ output ∘ grad_output, one per input and parameter.
struct Gradients {
    Tensor input;    // (B, N, d_model) ∂L/∂x_q; self-attention: the sum of the query, key and
                     //  value paths (what PyTorch puts in x.grad)
    Tensor key;      // (B, M_in, kdim) ∂L/∂x_k; empty for self-attention
    Tensor value;    // (B, M_in, vdim) ∂L/∂x_v; empty for self-attention
    Weights params;  // ∂L/∂ every weight in the weight's own shape (w_q, ..., bias_k, q_norm);
                     //  empty where the weight is empty
    MlaWeights mla;  // --form mla: ∂L/∂ every MLA weight in its own shape (params stays empty);
                     //  empty for the other forms
};

// The heads' gradients the shared steps' backward (b14-b6) hands to a form's own steps.
struct HeadGradients {
    Tensor dq;  // (B, h, N, d_k)
    Tensor dk;  // (B, G, M, d_k)  summed over each K/V head's query heads
    Tensor dv;  // (B, G, M, d_v)
};

struct BackwardResult {
    ForwardResult forward;
    Gradients grads;
};

// The backward alone, after `form`'s forward ran on `trace` with options.keep = &kept: the
// gradients of L = Σ output ∘ grad_output (grad_output (B, N, d_model)), traced as the trace's
// next steps. `attention_weights` is the forward's P (B, h, N, M), empty when it streamed;
// inputs, masks and options (but keep and workspace) are the forward's. `block`: the block
// attention sits in, if any (it names dOut and, pre-LN, the input x_norm). On dry tensors it
// computes nothing and the gradients are shapes.
Gradients backward(const Weights& weights, const Inputs& inputs, const Masks& masks,
                   const ForwardOptions& options, Form form, const Kept& kept,
                   const Tensor& attention_weights, const Tensor& grad_output, PassTrace& trace,
                   std::optional<BlockKind> block = std::nullopt);

// The forward pass of `form` (Packed, FusedQkv, PerHead), keeping what the backward needs,
// then the backward of L = Σ output ∘ grad_output (grad_output (B, N, d_model), batch-first),
// both traced: the forward's steps, then the backward's.
BackwardResult forward_backward(const Weights& weights, const Inputs& inputs, const Masks& masks,
                                const ForwardOptions& options, Form form, const Tensor& grad_output,
                                Tracer& tracer);

// grad_output must be the output's shape, (B, N, d_model); throws mha::Error otherwise.
void check_grad_output(const Tensor& grad_output, const Sizes& sizes);

// b14-b6 for a form that made its own heads (as forward_from_heads serves its forward): from
// grad_output (B, N, d_model) through W_o (grads.params.w_o, b_o) and the shared steps to each
// head's dQ, dK and dV, reading what forward_from_heads kept (`kept`) and its attention weights
// P (B, h, N, M) (empty when streamed); traced on the form's trace.
HeadGradients heads_backward(const Weights& weights, const Kept& kept, const Tensor& p,
                             const Masks& masks, const Sizes& sizes, const ForwardOptions& options,
                             const Tensor& grad_output, Gradients& grads, PassTrace& trace);

}  // namespace mha
