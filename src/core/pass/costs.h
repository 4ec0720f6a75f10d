#pragma once
// What one forward pass costs, from its sizes alone: its multiply-adds, and the bytes the
// kernels keep outside its tensors.

#include <cstddef>
#include <cstdint>

#include "core/pass/form.h"
#include "core/sizes.h"

namespace mha {

// Multiply-adds of one forward pass: the four projections and both attention products.
std::uint64_t forward_macs(const Sizes& sizes);

// Bytes one thread's kernels keep between calls outside any tensor (their buffers only
// grow): the projections' packing, the attention products' panels (standard) or the
// streaming tiles, and with the backward its products' panels and the streaming backward's
// tiles.
std::uint64_t scratch_bytes(const Sizes& sizes, AttentionPath path, bool backward);

}  // namespace mha
