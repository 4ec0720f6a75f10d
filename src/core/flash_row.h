#pragma once
// One query row of the streaming path, tile by tile: the running maximum, the running
// sum and the rescaled output that FlashAttention's online softmax keeps, so a trace can
// show how the row's context is built without the row's scores ever being stored.

#include <cstddef>
#include <vector>

#include "core/kernels.h"
#include "core/streaming.h"

namespace mha {

// The row's state after one tile of keys.
struct FlashTile {
    std::size_t first_key, keys;  // this tile: keys [first_key, first_key + keys)
    float tile_max;               // the largest of its scaled, masked scores (−inf: all blocked)
    float running_max;            // m after the tile: the largest score so far
    float shrink;                 // e^(m_before − m_after): what the sum and output were scaled by
    float running_sum;            // l after the tile: Σ e^(score − m) over the keys so far
    std::vector<float> output;    // (d_k) o after the tile: Σ e^(score − m) v, not divided by l
};

struct FlashRow {
    std::vector<FlashTile> tiles;
    std::vector<float> context;  // (d_k) o / l: the row's context (NaN when every key is blocked)
};

// Query `row` of q (N, d_k) against k, v (M, d_k), with the kernels and the tile width of
// attend_streaming, so the context is the one the streaming path writes for that row.
FlashRow trace_flash_row(const MatrixView& q, const MatrixView& k, const MatrixView& v,
                         const HeadMask& mask, float factor, std::size_t row,
                         std::size_t key_tile = stream_key_tile);

}  // namespace mha
