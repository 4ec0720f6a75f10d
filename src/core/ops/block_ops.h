#pragma once
// The residual sum a transformer block adds around attention, on contiguous (..., d_model)
// tensors, and the float32 range check of the block's and the model's tensors. (LayerNorm and
// GELU sit beside their adjoints: core/layers/layer_norm.h, gelu.h.) On a dry operand (a dry
// run) the sum is shape-only and the check has nothing to check.

#include <cstddef>
#include <string>

#include "core/tensor/tensor.h"
#include "core/tensor/workspace.h"

namespace mha {

// a + b, element-wise; both contiguous and of the same shape; split over `threads` threads.
// The sum from the workspace when there is one.
Tensor add(const Tensor& a, const Tensor& b, std::size_t threads, Workspace* workspace = nullptr);

// Throws mha::Error when t holds a value beyond float32 (an infinity, or NaN from one), as an
// overflowing projection does in attention: "a value of <what> overflows float32 at flat
// index i of (shape): ...". For the embeddings, feed-forward, residual stream and logits.
void check_in_float32(const Tensor& t, const std::string& what);

}  // namespace mha
