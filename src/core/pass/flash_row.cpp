// The online softmax of one query row, recorded after every tile of keys:
//   S = q K_tileᵀ, scaled and masked;  m' = max(m, max S);  c = e^(m − m')
//   l = l·c + Σ e^(S − m');  o = o·c + e^(S − m') V_tile;  finally context = o / l

#include "core/pass/flash_row.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mha {

FlashRow trace_flash_row(const MatrixView& q, const MatrixView& k, const MatrixView& v,
                         const HeadMask& mask, float factor, std::size_t row,
                         std::size_t key_tile) {
    const float minus_inf = -std::numeric_limits<float>::infinity();
    const std::size_t d_k = q.cols, d_v = v.cols;
    const MatrixView query{q.data + row * q.row_stride, 1, d_k, q.row_stride, q.col_stride};
    std::vector<float> scores(key_tile), o(d_v, 0.0f);
    float m = minus_inf, l = 0.0f;
    FlashRow result;
    for (std::size_t k0 = 0; k0 < mask.key_end(row); k0 += key_tile) {
        const std::size_t cols = std::min(key_tile, k.rows - k0);
        const MatrixView keys{k.data + k0 * k.row_stride, cols, d_k, k.row_stride, k.col_stride};
        gemm(query, keys.transposed(), scores.data(), key_tile);                   // 6
        scale_mask_tile(scores.data(), key_tile, row, 1, k0, cols, factor, mask);  // 7, 8
        FlashTile tile{k0, cols, max_of(scores.data(), cols), m, 1.0f, l, {}};
        const float new_max = std::max(m, tile.tile_max);
        if (new_max == minus_inf) {  // nothing visible yet: the tile adds nothing
            tile.output = o;
            result.tiles.push_back(tile);
            continue;
        }
        tile.shrink = exp_nonpositive(m - new_max);  // 0 while m is −inf
        float tile_sum = 0.0f;  // one sum, keys in order, as the fused tile adds them
        for (std::size_t j = 0; j < cols; ++j) {
            scores[j] = exp_nonpositive(scores[j] - new_max);
            tile_sum += scores[j];
        }
        l = l * tile.shrink + tile_sum;
        if (tile.shrink != 1.0f) {
            for (float& x : o) x *= tile.shrink;
        }
        m = new_max;
        const MatrixView values{v.data + k0 * v.row_stride, cols, d_v, v.row_stride, v.col_stride};
        gemm({scores.data(), 1, cols, key_tile, 1}, values, o.data(), d_v, true);  // 10
        tile.running_max = m;
        tile.running_sum = l;
        tile.output = o;
        result.tiles.push_back(tile);
    }
    result.context.assign(d_v, std::numeric_limits<float>::quiet_NaN());
    if (m != minus_inf) {
        const float inverse = 1.0f / l;
        for (std::size_t j = 0; j < d_v; ++j) result.context[j] = o[j] * inverse;
    }
    return result;
}

std::vector<float> standard_row(const MatrixView& q, const MatrixView& k, const MatrixView& v,
                                const HeadMask& mask, float factor, std::size_t row) {
    const std::size_t d_k = q.cols, m = k.rows;
    const MatrixView query{q.data + row * q.row_stride, 1, d_k, q.row_stride, q.col_stride};
    std::vector<float> weights(m), context(v.cols, 0.0f);
    gemm(query, k.transposed(), weights.data(), m);                  // 6
    scale_mask_tile(weights.data(), m, row, 1, 0, m, factor, mask);  // 7, 8
    softmax_rows(weights.data(), 1, m, false);                       // 9
    gemm({weights.data(), 1, m, m, 1}, v, context.data(), v.cols);   // 10
    return context;
}

FlashFacts flash_facts(const MatrixView& q, const MatrixView& k, const MatrixView& v,
                       const HeadMask& mask, float factor, std::size_t row, std::size_t head) {
    FlashRow flash = trace_flash_row(q, k, v, mask, factor, row);
    FlashFacts facts{row,
                     head,
                     stream_key_tile,
                     std::move(flash.tiles),
                     std::move(flash.context),
                     standard_row(q, k, v, mask, factor, row),
                     0.0};
    for (std::size_t j = 0; j < facts.context.size(); ++j) {
        const float a = facts.context[j], b = facts.standard[j];
        if (std::isnan(a) && std::isnan(b)) continue;
        facts.max_difference = std::max(facts.max_difference, std::fabs(double(a) - double(b)));
        if (std::isnan(a) || std::isnan(b)) facts.max_difference = std::nan("");
    }
    return facts;
}

}  // namespace mha
