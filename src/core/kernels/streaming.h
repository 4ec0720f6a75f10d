#pragma once
// Steps 6-10 for one (batch, head) unit without its (N, M) scores: the online
// softmax (FlashAttention-2 style) on the fused tile of core/kernels/kernels.h. K and V are
// packed once per unit; queries go in tiles; for each tile of keys the scores are
// computed, scaled and masked, the running row maximum and sum are updated, and the
// context is rescaled and extended. Memory: packed K and V, one panel of scores.

#include <cstddef>
#include <cstdint>

#include "core/kernels/kernels.h"

namespace mha {

// Tile sizes of the streaming path, the one place that sets them (core/pass/flash_row.h
// shows a row with the same key tiles). The key tile fixes the summation order of each
// output (a multiple of every variant's mr); the query tile is a multiple of every nr.
inline constexpr std::size_t stream_query_tile = 64;
inline constexpr std::size_t stream_key_tile = 256;

// context (N, d_v) = softmax(q kᵀ · factor + mask) v, written row-major with rows
// ldc apart; q (N, d_k), k (M, d_k), v (M, d_v) as strided views. A query whose
// keys are all blocked gets NaN (like the standard path) or zeros when
// zero_masked_rows. Returns how many such rows there were. lse (N), when not null, gets each
// row's log-sum-exp, what the backward needs to recompute the weights P = e^(score − lse):
// lse[i] = max_j s_ij + ln Σ_j e^(s_ij − max), natural log, over the scaled, soft-capped,
// masked scores s; −inf for a row with every key blocked (or no key at all).
std::size_t attend_streaming(const MatrixView& q, const MatrixView& k, const MatrixView& v,
                             const HeadMask& mask, float factor, bool zero_masked_rows,
                             float* context, std::size_t ldc, float* lse = nullptr);

// Floats one thread holds while running attend_streaming on M keys (d_k wide, values d_v)
// with the widest variant's tile (widest_flash_tile: the bound is the same on every CPU):
// packed K and V, packed queries, the context tile, row statistics and one panel of scores.
// An Error if that exceeds 64 bits.
std::uint64_t streaming_scratch_floats(std::size_t d_k, std::size_t d_v, std::size_t m);

}  // namespace mha
