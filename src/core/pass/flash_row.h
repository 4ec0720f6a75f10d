#pragma once
// One query row of the streaming path, tile by tile: the running maximum, the running
// sum and the rescaled output that FlashAttention's online softmax keeps, so a trace can
// show how the row's context is built without the row's scores ever being stored; and the
// same row through the streaming backward: P recomputed from lse, dS, and dQ's row growing.

#include <cstddef>
#include <vector>

#include "core/kernels/kernels.h"
#include "core/kernels/streaming.h"
#include "core/kernels/streaming_backward.h"
#include "core/pass/step.h"

namespace mha {

struct FlashRow {
    std::vector<FlashTile> tiles;
    std::vector<float> context;  // (d_v) o / l: the row's context (NaN when every key is blocked)
};

// Query `row` of q (N, d_k) against k (M, d_k), v (M, d_v), with the kernels and the tile
// width of attend_streaming, so the context is the one the streaming path writes for that row.
FlashRow trace_flash_row(const MatrixView& q, const MatrixView& k, const MatrixView& v,
                         const HeadMask& mask, float factor, std::size_t row,
                         std::size_t key_tile = stream_key_tile);

// Query `row` as the standard path computes it: the whole row of scores (steps 6-8 with
// scale_mask_tile), softmax, weights @ v. (d_v); NaN when every key is blocked.
std::vector<float> standard_row(const MatrixView& q, const MatrixView& k, const MatrixView& v,
                                const HeadMask& mask, float factor, std::size_t row);

// The flash row of query `row` of one head, with the standard path's row beside it.
FlashFacts flash_facts(const MatrixView& q, const MatrixView& k, const MatrixView& v,
                       const HeadMask& mask, float factor, std::size_t row, std::size_t head);

struct FlashBackRow {
    std::vector<FlashBackTile> tiles;
    float d = 0.0f;         // D = rowsum(dO ∘ O)
    std::vector<float> dq;  // (d_k) the row of dQ (NaN when every key is blocked)
};

// Query `row` of the backward of L = Σ O ∘ d_o, d_o (N, d_v), with the tiles and kernels of
// attend_backward_streaming, so dq is the row that function writes: per tile of keys,
// P = e^(score − lse) and dS = P ∘ (dP − D) · cap' · factor, then dq += dS k.
FlashBackRow trace_flash_back_row(const MatrixView& q, const MatrixView& k, const MatrixView& v,
                                  const HeadMask& mask, float factor, const UnitForward& forward,
                                  const MatrixView& d_o, std::size_t row);

struct StandardBackRow {
    float d = 0.0f;         // rowsum(dP ∘ P)
    std::vector<float> dq;  // (d_k)
};

// Query `row` as the standard backward computes it: the whole row of P (steps 6-9), dP = d_o vᵀ,
// D = rowsum(dP ∘ P), dS = P ∘ (dP − D) · cap' · factor, dq = dS k. NaN when every key is
// blocked.
StandardBackRow standard_back_row(const MatrixView& q, const MatrixView& k, const MatrixView& v,
                                  const HeadMask& mask, float factor, const MatrixView& d_o,
                                  std::size_t row);

// The streaming backward's row `row` of one head, with the standard backward's row beside it.
FlashBackFacts flash_back_facts(const MatrixView& q, const MatrixView& k, const MatrixView& v,
                                const HeadMask& mask, float factor, const UnitForward& forward,
                                const MatrixView& d_o, std::size_t row, std::size_t head);

}  // namespace mha
