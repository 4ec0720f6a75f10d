#pragma once
// The operations a transformer block adds around attention: LayerNorm, GELU and the
// residual sum, on contiguous (..., d_model) tensors. Plain loops, accumulated in double;
// the kernels, beside their adjoints, are in core/backward/layer_norm.h and gelu.h.

#include <string>

#include "core/backward/layer_norm.h"
#include "core/tensor/tensor.h"

namespace mha {

// Each row of x (rows, E) normalised to mean 0 and variance 1 (biased, as nn.LayerNorm),
// then scaled by gamma (E) and shifted by beta (E).
Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta);

// GELU(u) = u · Φ(u) = u/2 · (1 + erf(u/√2)), element-wise: nn.GELU() / F.gelu without tanh.
Tensor gelu(const Tensor& u);

// a + b, element-wise; both contiguous and of the same shape.
Tensor add(const Tensor& a, const Tensor& b);

// Throws mha::Error when t holds a value beyond float32 (an infinity, or NaN from one), as an
// overflowing projection does in attention: "a value of <what> overflows float32 at flat
// index i of (shape): ...". For the embeddings, feed-forward, residual stream and logits.
void check_in_float32(const Tensor& t, const std::string& what);

}  // namespace mha
