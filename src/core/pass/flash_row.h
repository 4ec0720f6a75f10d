#pragma once
// One query row of the streaming path, tile by tile: the running maximum, the running
// sum and the rescaled output that FlashAttention's online softmax keeps, so a trace can
// show how the row's context is built without the row's scores ever being stored.

#include <cstddef>
#include <vector>

#include "core/kernels/kernels.h"
#include "core/kernels/streaming.h"
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

}  // namespace mha
