#pragma once
// What one forward pass costs, from its sizes alone: multiply-adds and bytes.

#include <cstddef>
#include <cstdint>

#include "core/pass/form.h"
#include "core/sizes.h"

namespace mha {

// Multiply-adds of one forward pass: the four projections and both attention products.
std::uint64_t forward_macs(const Sizes& sizes);

// Bytes the forward pass allocates on the given path with the given threads:
// Q, K, V, context, concat, output, the scores (standard only) and every thread's
// scratch, computed without overflow (throws mha::Error past 64 bits). A formula, for the
// chunks and tokens of a decode; every other budget counts its tensors by running the pass
// dry instead (app/run/budget.cpp).
std::uint64_t forward_bytes(const Sizes& sizes, AttentionPath path, std::size_t threads);

// Bytes one thread's kernels keep between calls outside any tensor (their buffers only
// grow): the projections' packing, the attention products' panels (standard) or the
// streaming tiles, and with the backward its products' panels and the streaming backward's
// tiles.
std::uint64_t scratch_bytes(const Sizes& sizes, AttentionPath path, bool backward);

}  // namespace mha
