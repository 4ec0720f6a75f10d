#pragma once
// The maths of attention in plain loops, forward and backward, in double: the first file to
// read, and the independent check of the fast kernels and of --gradcheck.

#include <cstddef>
#include <vector>

#include "core/ops/masks.h"
#include "core/pass/attention.h"
#include "core/sizes.h"
#include "core/tensor/tensor.h"

namespace mha {

// A row-major array of doubles with the shape of the tensor it stands for; absent (no shape)
// where that tensor is empty, as a missing bias is.
struct DoubleTensor {
    Shape shape;
    std::vector<double> values;  // element_count(shape) values in C order

    bool absent() const { return shape.empty(); }
};

// The same tensor in double, contiguous; absent for an empty tensor.
DoubleTensor to_double(const Tensor& t);

// Weights (core/pass/attention.h) in double, field for field, the same shapes.
struct DoubleWeights {
    DoubleTensor w_q, w_k, w_v, w_o;  // (h·d_k, d_model), (G·d_k, kdim), (G·d_k, vdim),
                                      // (d_model, h·d_k)
    DoubleTensor b_q, b_k, b_v, b_o;  // (h·d_k), (G·d_k), (G·d_k), (d_model); absent without
    DoubleTensor q_norm, k_norm;      // (d_k) each; absent without QK-norm
    DoubleTensor bias_k, bias_v;      // (G·d_k) each; absent without add_bias_kv
    DoubleTensor w_g, b_g;            // (h·d_k or h, d_model), (h·d_k or h); absent without --gate
};
DoubleWeights to_double(const Weights& w);

struct DoubleInputs {
    DoubleTensor x_q;  // (B, N, d_model)
    DoubleTensor x_k;  // (B, M, kdim); absent for self-attention: x_q plays key and value
    DoubleTensor x_v;  // (B, M, vdim); absent for self-attention
};
// Self-attention (Inputs::self_attention) keeps only x_q, so that perturbing it perturbs
// the query, key and value paths at once, as perturbing PyTorch's one x does.
DoubleInputs to_double(const Inputs& in);

// Gradients of L = Σ output ∘ grad_output, as common.md's Gradients, in double.
struct DoubleGradients {
    DoubleTensor input;    // (B, N, d_model): self-attention, the query, key and value paths
    DoubleTensor key;      // (B, M, kdim); absent for self-attention
    DoubleTensor value;    // (B, M, vdim); absent for self-attention
    DoubleWeights params;  // each in its weight's shape; absent where the weight is
};

// One query row's softmax and its adjoint, as the backward met them: batch 0, head 0, the
// last query (the one that sees the most keys under a causal rule).
struct SoftmaxRow {
    std::vector<double> p;       // (M) the attention weights
    std::vector<double> dp;      // (M) ∂L/∂p
    double d_from_output = 0.0;  // Σ_d dO_h ∘ O_h over the row's context: equals Σ_j dp_j p_j
};

struct ReferenceGradResult {
    DoubleTensor output;   // (B, N, d_model)
    DoubleTensor weights;  // (B, h, N, M + appended) P
    DoubleGradients grads;
    SoftmaxRow row;  // empty when there is no query or key (or head 0 is ablated)
    std::size_t fully_masked_rows = 0;  // (b, h, n) rows with every key blocked
};

// The forward pass of forward() (the standard, packed form) in double: `sizes` as check_pass
// returns them for the float weights, inputs, masks and options these were read from (M
// without the appended positions); the options' heads, scale, scale_base, rope,
// add_zero_attn, zero_masked_rows and ablate_head are honoured, its threads and path ignored.
DoubleTensor reference_output(const DoubleWeights& weights, const DoubleInputs& inputs,
                              const Masks& masks, const ForwardOptions& options,
                              const Sizes& sizes);

// The same forward, then the backward of L = Σ output ∘ grad_output (B, N, d_model).
ReferenceGradResult reference_forward_backward(const DoubleWeights& weights,
                                               const DoubleInputs& inputs, const Masks& masks,
                                               const ForwardOptions& options, const Sizes& sizes,
                                               const DoubleTensor& grad_output);

// Bytes --gradcheck's reference holds at its peak for these sizes (throws mha::Error past 64
// bits): three (B, h, N, M) arrays of doubles (a forward's soft-cap t and P, the checked
// pass's P), the weights four times (the copy, the nudged copy, two gradients), the inputs
// four times, and the per-token activations with their gradients.
std::uint64_t reference_bytes(const Sizes& sizes);

// The same forward on float weights and inputs (checked as check_pass checks them), rounded
// to float: output (B, N, d_model) and weights (B, h, N, M + appended), as forward() gives.
ForwardResult reference_forward(const Weights& weights, const Inputs& inputs, const Masks& masks,
                                const ForwardOptions& options);

// Step 9's adjoint on one row of m (p the weights, dp = ∂L/∂p, ds = ∂L/∂s written), the form
// the backward uses: ds = p ∘ (dp − Σ_j dp_j p_j).
void softmax_row_backward(const double* p, const double* dp, double* ds, std::size_t m);

// The same in the full Jacobian form, its check: ds_i = Σ_j (diag(p) − p pᵀ)_ij dp_j, the
// (m, m) matrix formed.
void softmax_row_backward_jacobian(const double* p, const double* dp, double* ds, std::size_t m);

}  // namespace mha
