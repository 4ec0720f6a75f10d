#pragma once
// Steps 6-10 on units of work: one (batch, head) pair each, what it reads and where it writes;
// every form's pass hands its units to run_units, which splits them over threads.

#include <cstddef>
#include <functional>

#include "core/kernels/kernels.h"

namespace mha {

// The unit of work: one (batch, head) pair of steps 6-10, what it reads and where it writes.
struct AttentionUnit {
    MatrixView q;     // (N, d_k)
    MatrixView k, v;  // (M, d_k), (M, d_v): the key/value head this query head reads
    HeadMask mask;    // what step 8 adds
    float* scores;    // (N, M) row-major: the scores, then the weights; unused when streamed
    float* context;   // (N, d_v), rows ldc apart
    std::size_t ldc;
    // Where the unit sits, for messages: its batch row, its head, the position of query 0.
    std::size_t batch = 0, head = 0, first_query = 0;
    float* lse = nullptr;  // (N) streamed for a backward: each row's log-sum-exp; null: none
};

// The units of one call: unit(u) for u < count, run over threads in any order.
struct Units {
    std::size_t count;
    std::function<AttentionUnit(std::size_t)> unit;
};

// What steps 7 and 9 do to every unit.
struct UnitMath {
    float factor;           // step 7: 1/sqrt(d_k) (or 1/sqrt(S)), or 1
    bool zero_masked_rows;  // step 9: a row with every key blocked gets zeros instead of NaN
};

// Which part of steps 6-10 run_units does to each unit.
enum class UnitStep {
    Scores,              // 6   scores = q kᵀ
    Scale,               // 7   scores · factor
    Mask,                // 8   + attn_mask, + key padding, causal -inf
    Normalise,           // 9   weights = softmax(scores) over the keys, or the masks' normaliser
    ScaleMaskNormalise,  // 7-9 fused, one pass over each row
    Context,             // 10  context = weights v
    Attend,              // 6-10, 7-9 fused: the untraced standard path
    Streamed,            // 6-10 on tiles with an online softmax; no scores stored
};

// Runs one part of steps 6-10 on every unit, each unit claimed by the next free thread;
// returns the rows with every key blocked (counted by Normalise, ScaleMaskNormalise, Attend
// and Streamed). Each unit writes only its own memory, so every thread count gives the same bits.
// Scores beyond float32 are never taken for masking: a unit whose q·k would pass FLT_MAX while
// q·k·factor does not forms its scores as (q·factor) kᵀ, as PyTorch does (step 6 then holds them
// scaled and step 7 leaves them); a score that passes FLT_MAX even scaled is an Error naming its
// position.
std::size_t run_units(UnitStep step, const Units& units, const UnitMath& math, std::size_t threads);

}  // namespace mha
