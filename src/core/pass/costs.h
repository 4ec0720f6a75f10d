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
// scratch, computed without overflow (throws mha::Error past 64 bits).
std::uint64_t forward_bytes(const Sizes& sizes, AttentionPath path, std::size_t threads);

}  // namespace mha
