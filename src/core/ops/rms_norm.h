#pragma once
// RMSNorm of the last dimension, as QK-norm applies it to each head's q and k.

#include "core/tensor/tensor.h"

namespace mha {

// The ε of Qwen 3's, OLMo 2's and DeepSeek-V2's RMSNorm (rms_norm_eps in their configs).
inline constexpr double rms_norm_eps = 1e-6;

// Every (d) row of x (..., d), any strides, in place: x / sqrt(mean(x²) + ε) · weight, in double.
// weight (d).
void rms_norm_rows(Tensor& x, const Tensor& weight, double eps = rms_norm_eps);

// The backward of rms_norm_rows on x (..., d), any strides, as it was before the norm: dy
// (..., d) contiguous becomes dx in place, and dweight (d) gets Σ_rows dy ∘ x / rms(x), rows in
// order. With n = x / r, r = sqrt(mean(x²) + ε), g = dy ∘ weight: dx = (g − n · mean(g ∘ n)) / r.
// In double. On dry operands it computes nothing and dweight is a shape.
void rms_norm_rows_backward(const Tensor& x, const Tensor& weight, Tensor& dy, Tensor& dweight,
                            double eps = rms_norm_eps);

}  // namespace mha
