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

// Bytes the output gate (--gate, step 13) adds to them: the gate (B, N, gate_rows), h·d_v
// element-wise or h head-wise, and the gated concat (B, N, h·d_v).
std::uint64_t gate_bytes(const Sizes& sizes, std::size_t gate_rows);

}  // namespace mha
