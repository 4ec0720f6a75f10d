// The online softmax on the fused tile (kernels.h), one (batch, head) unit at a time:
//   pack K and V once, in the micro-kernel's panels
//   for each tile of 64 queries: pack Q; O = 0, row_max = -inf, row_sum = 0
//     for each tile of keys (stopping once a causal mask blocks the rest), per query panel:
//       Sᵀ = K_tile Qᵀ / sqrt(d_k), masked                  (keys, queries)
//       new_max = max(row_max, max S);  c = e^(row_max - new_max)
//       P = e^(S - new_max);  row_sum = row_sum · c + Σ P     P stays where Vᵀ P reads it
//       Oᵀ = Oᵀ · c + V_tileᵀ P                               (d_v, queries)
//   context = O / row_sum;  lse = row_max + ln row_sum (when asked, for the backward)
// Every query's result depends only on its own query, the keys and the tile width, so
// splitting units over threads, and the register tile of each kernel variant, change no bit.

#include "core/kernels/streaming.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/checked.h"
#include "core/ops/softcap.h"
#include "core/position/position_bias.h"
#include "core/tensor/scratch.h"

namespace mha {

namespace {

constexpr float minus_inf = -std::numeric_limits<float>::infinity();

std::size_t round_up(std::size_t n, std::size_t multiple) {
    return (n + multiple - 1) / multiple * multiple;
}

// One thread's buffers, kept between units (pool threads live on); they only grow.
struct FlashScratch {
    ScratchBuffer keys, values;    // packed K and V of the unit
    ScratchBuffer queries, o;      // packed Q tile; Oᵀ (d_v, stream_query_tile)
    ScratchBuffer scores, shrink;  // one panel: (kt, nr) and (nr)
    float row_max[stream_query_tile], row_sum[stream_query_tile];
};
FlashScratch& flash_scratch() {
    thread_local FlashScratch s;
    return s;
}

// m's rows [first, first + rows) -> panels of `width` rows each, (m.cols, width) row-major,
// zeros past `rows` up to `padded_rows`: a panel's rows are read side by side. The packed
// keys (all M, mask_scores blocks the zero keys' scores) and each tile of queries.
void pack_rows(const MatrixView& m, std::size_t first, std::size_t rows, std::size_t padded_rows,
               std::size_t width, float* out) {
    for (std::size_t r0 = 0; r0 < padded_rows; r0 += width) {
        const std::size_t count = r0 < rows ? std::min(width, rows - r0) : 0;
        float* panel = out + r0 * m.cols;
        for (std::size_t d = 0; d < m.cols; ++d) {
            float* dst = panel + d * width;
            const float* src = m.data + (first + r0) * m.row_stride + d * m.col_stride;
            for (std::size_t r = 0; r < count; ++r) dst[r] = src[r * m.row_stride];
            std::fill(dst + count, dst + width, 0.0f);
        }
    }
}

// The keys a tile starting at k0 spans: stream_key_tile, or the rest rounded up to mr
// (the extra keys are blocked, so their zero weights change no sum).
std::size_t tile_keys(std::size_t k0, std::size_t m, std::size_t mr) {
    return std::min(stream_key_tile, round_up(m - k0, mr));
}

// v (M, d_v) -> per tile of keys, panels of mr features, each (tile_keys, mr) row-major;
// zeros past M and past d_v. Each key's row is copied mr features at a time.
void pack_values(const MatrixView& v, std::size_t mr, std::size_t padded_d, float* out) {
    const std::size_t m = v.rows;
    for (std::size_t k0 = 0; k0 < m; k0 += stream_key_tile) {
        const std::size_t keys = tile_keys(k0, m, mr);
        float* tile = out + k0 * padded_d;
        for (std::size_t j = 0; j < keys; ++j) {
            const float* src = v.data + (k0 + j) * v.row_stride;
            for (std::size_t f = 0; f < padded_d; f += mr) {
                float* dst = tile + f * keys + j * mr;
                const std::size_t features =
                    k0 + j < m ? std::min(mr, v.cols - std::min(f, v.cols)) : 0;
                for (std::size_t d = 0; d < features; ++d) dst[d] = src[(f + d) * v.col_stride];
                std::fill(dst + features, dst + mr, 0.0f);
            }
        }
    }
}

// Step 8 (7 is done) on a transposed tile: scores (kt, nr) hold keys [k0, k0 + kt) for
// queries [first, first + count). The float operations of scale_mask_tile, in its order;
// keys past M are blocked too.
void mask_scores(float* scores, std::size_t kt, std::size_t nr, std::size_t first,
                 std::size_t count, std::size_t k0, const HeadMask& mask) {
    const std::size_t keys = std::min(kt, mask.m - k0);
    const double cap = mask.masks->softcap;
    const Window window{mask.masks->window, mask.masks->sinks};
    const bool per_score =
        cap > 0.0 || mask.attn != nullptr || mask.padding != nullptr || mask.alibi_slope != 0.0;
    for (std::size_t r = 0; r < count; ++r) {
        const std::size_t query = first + r, position = query + mask.m - mask.n;
        float* column = scores + r;  // key j at column[j * nr]
        for (std::size_t j = 0; per_score && j < keys; ++j) {
            float& s = column[j * nr];
            if (cap > 0.0) softcap(&s, 1, cap);
            if (mask.attn != nullptr) s += mask.attn[query * mask.m + k0 + j];
            if (mask.padding != nullptr) s += mask.padding[k0 + j];
            if (mask.alibi_slope != 0.0)
                add_alibi({&s, 1, 1, 1, position, k0 + j}, mask.alibi_slope);
        }
        for (std::size_t j = std::max(mask.key_end(query), k0) - k0; j < kt; ++j)
            column[j * nr] = minus_inf;
        for (std::size_t j = 0; window.size > 0 && j < keys; ++j) {
            if (!window_allows(window, position, k0 + j)) column[j * nr] = minus_inf;
        }
    }
}

}  // namespace

std::uint64_t streaming_scratch_floats(std::size_t d_k, std::size_t d_v, std::size_t m) {
    const std::string what = "the memory for this configuration";
    const FlashRegisterTile tile = widest_flash_tile();
    const std::uint64_t keys = m / tile.mr + (m % tile.mr != 0);  // in panels of mr
    return checked_sum(
        {checked_product({keys, tile.mr, d_k + round_up(d_v, tile.mr)}, what),  // packed K, V
         checked_product({stream_query_tile, d_k + d_v + 2}, what),  // packed Q, O, row max and sum
         (stream_key_tile + 1) * tile.nr},  // one panel's scores, its shrink
        what);
}

std::size_t attend_streaming(const MatrixView& q, const MatrixView& k, const MatrixView& v,
                             const HeadMask& mask, float factor, bool zero_masked_rows,
                             float* context, std::size_t ldc, float* lse) {
    const std::size_t n = q.rows, m = k.rows, d_k = q.cols, d_v = v.cols;
    const FlashRegisterTile tile = flash_tile();
    const std::size_t padded_d = round_up(d_v, tile.mr);
    FlashScratch& s = flash_scratch();
    float* const keys = s.keys.floats(round_up(m, tile.mr) * d_k);
    float* const values = s.values.floats(round_up(m, tile.mr) * padded_d);
    float* const queries = s.queries.floats(stream_query_tile * d_k);
    float* const o = s.o.floats(d_v * stream_query_tile);
    float* const scores = s.scores.floats(stream_key_tile * tile.nr);
    float* const shrink = s.shrink.floats(tile.nr);
    pack_rows(k, 0, m, round_up(m, tile.mr), tile.mr, keys);  // (M, d_k) in panels of mr keys
    pack_values(v, tile.mr, padded_d, values);
    std::size_t masked = 0;
    for (std::size_t q0 = 0; q0 < n; q0 += stream_query_tile) {
        const std::size_t rows = std::min(stream_query_tile, n - q0);
        pack_rows(q, q0, rows, stream_query_tile, tile.nr, queries);  // panels of nr queries
        std::fill(o, o + d_v * stream_query_tile, 0.0f);
        std::fill(std::begin(s.row_max), std::end(s.row_max), minus_inf);
        std::fill(std::begin(s.row_sum), std::end(s.row_sum), 0.0f);
        const std::size_t key_end = mask.key_end(q0 + rows - 1);  // keys past it are blocked
        for (std::size_t k0 = 0; k0 < key_end; k0 += stream_key_tile) {
            const std::size_t kt = tile_keys(k0, m, tile.mr);
            for (std::size_t first = 0; first < rows; first += tile.nr) {
                // 6, 7: (kt, d_k) x (d_k, nr) -> (kt, nr), scaled
                flash_scores(keys + k0 * d_k, queries + first * d_k, d_k, kt, factor, scores);
                // 8
                mask_scores(scores, kt, tile.nr, q0 + first, std::min(tile.nr, rows - first), k0,
                            mask);
                // 9, online: the scores become P
                flash_softmax(scores, kt, s.row_max + first, s.row_sum + first, shrink);
                // 10: Oᵀ = Oᵀ · shrink + (d_v, kt) x (kt, nr)
                flash_accumulate(values + k0 * padded_d, scores, kt, d_v, shrink, o + first,
                                 stream_query_tile);
            }
        }
        for (std::size_t r = 0; r < rows; ++r) {
            float* out = context + (q0 + r) * ldc;
            if (lse != nullptr) {
                lse[q0 + r] =
                    s.row_max[r] == minus_inf ? minus_inf : s.row_max[r] + std::log(s.row_sum[r]);
            }
            if (m == 0) {  // no key at all: an empty weighted sum, zero as in PyTorch
                std::fill(out, out + d_v, 0.0f);
                continue;
            }
            if (s.row_max[r] == minus_inf) {
                const float fill =
                    zero_masked_rows ? 0.0f : std::numeric_limits<float>::quiet_NaN();
                std::fill(out, out + d_v, fill);
                ++masked;
                continue;
            }
            const float inverse = 1.0f / s.row_sum[r];
            for (std::size_t j = 0; j < d_v; ++j) out[j] = o[j * stream_query_tile + r] * inverse;
        }
    }
    return masked;
}

}  // namespace mha
