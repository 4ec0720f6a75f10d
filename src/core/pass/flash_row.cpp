// The online softmax of one query row, recorded after every tile of keys:
//   S = q K_tileᵀ, scaled and masked;  m' = max(m, max S);  c = e^(m − m')
//   l = l·c + Σ e^(S − m');  o = o·c + e^(S − m') V_tile;  finally context = o / l
// and the same row backward, from the forward's lse and O only:
//   D = dO·O;  per tile: P = e^(S − lse);  dS = P ∘ (dO V_tileᵀ − D);  dq += dS K_tile

#include "core/pass/flash_row.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/ops/softcap.h"

namespace mha {

namespace {

// The largest |a − b| over two rows (0 where both are NaN, NaN where one is).
double row_difference(const std::vector<float>& a, const std::vector<float>& b) {
    double worst = 0.0;
    for (std::size_t j = 0; j < a.size(); ++j) {
        if (std::isnan(a[j]) && std::isnan(b[j])) continue;
        worst = std::max(worst, std::fabs(double(a[j]) - double(b[j])));
        if (std::isnan(a[j]) || std::isnan(b[j])) worst = std::nan("");
    }
    return worst;
}

// Row `row` of m as a (1, cols) matrix.
MatrixView row_of(const MatrixView& m, std::size_t row) {
    return {m.data + row * m.row_stride, 1, m.cols, m.row_stride, m.col_stride};
}

}  // namespace

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
    facts.max_difference = row_difference(facts.context, facts.standard);
    return facts;
}

FlashBackRow trace_flash_back_row(const MatrixView& q, const MatrixView& k, const MatrixView& v,
                                  const HeadMask& mask, float factor, const UnitForward& forward,
                                  const MatrixView& d_o, std::size_t row) {
    const std::size_t d_k = q.cols, d_v = v.cols;
    FlashBackRow result;
    result.d = row_d(d_o, forward.context, row);
    const float lse = forward.lse[row];
    std::vector<float> p(stream_key_tile), ds(stream_key_tile);
    result.dq.assign(d_k, 0.0f);
    for (std::size_t k0 = 0; k0 < mask.key_end(row); k0 += stream_key_tile) {
        const std::size_t cols = std::min(stream_key_tile, k.rows - k0);
        const MatrixView keys{k.data + k0 * k.row_stride, cols, d_k, k.row_stride, k.col_stride};
        const MatrixView values{v.data + k0 * v.row_stride, cols, d_v, v.row_stride, v.col_stride};
        gemm(row_of(q, row), keys.transposed(), p.data(), stream_key_tile);       // S
        gemm(row_of(d_o, row), values.transposed(), ds.data(), stream_key_tile);  // dP
        softmax_backward_tile(p.data(), ds.data(), stream_key_tile, row, 1, k0, cols, factor, mask,
                              &lse, &result.d);
        FlashBackTile tile{k0, cols, 0.0f, 0.0f, {}};
        for (std::size_t j = 0; j < cols; ++j) {
            tile.weight_sum += p[j];
            tile.ds_sum += ds[j];
        }
        gemm({ds.data(), 1, cols, stream_key_tile, 1}, keys, result.dq.data(), d_k, true);
        tile.dq = result.dq;
        result.tiles.push_back(std::move(tile));
    }
    if (lse == -std::numeric_limits<float>::infinity() && k.rows > 0)
        result.dq.assign(d_k, std::numeric_limits<float>::quiet_NaN());
    return result;
}

StandardBackRow standard_back_row(const MatrixView& q, const MatrixView& k, const MatrixView& v,
                                  const HeadMask& mask, float factor, const MatrixView& d_o,
                                  std::size_t row) {
    const std::size_t m = k.rows;
    const double cap = mask.masks->softcap;
    std::vector<float> p(m), dp(m), slopes(m, 1.0f);
    gemm(row_of(q, row), k.transposed(), p.data(), m);  // 6
    if (cap > 0.0) softcap_slopes(p.data(), m, factor, cap, slopes.data());
    scale_mask_tile(p.data(), m, row, 1, 0, m, factor, mask);  // 7, 8
    softmax_rows(p.data(), 1, m, false);                       // 9: P, stored whole
    gemm(row_of(d_o, row), v.transposed(), dp.data(), m);      // dP
    StandardBackRow result;
    for (std::size_t j = 0; j < m; ++j) result.d += dp[j] * p[j];
    for (std::size_t j = 0; j < m; ++j) dp[j] = p[j] * (dp[j] - result.d) * slopes[j] * factor;
    result.dq.assign(q.cols, 0.0f);
    gemm({dp.data(), 1, m, m, 1}, k, result.dq.data(), q.cols);  // dq = dS k
    return result;
}

FlashBackFacts flash_back_facts(const MatrixView& q, const MatrixView& k, const MatrixView& v,
                                const HeadMask& mask, float factor, const UnitForward& forward,
                                const MatrixView& d_o, std::size_t row, std::size_t head) {
    FlashBackRow flash = trace_flash_back_row(q, k, v, mask, factor, forward, d_o, row);
    StandardBackRow standard = standard_back_row(q, k, v, mask, factor, d_o, row);
    FlashBackFacts facts;
    facts.row = row;
    facts.head = head;
    facts.key_tile = stream_key_tile;
    facts.lse = forward.lse[row];
    facts.d = flash.d;
    facts.d_standard = standard.d;
    facts.tiles = std::move(flash.tiles);
    facts.dq = std::move(flash.dq);
    facts.standard = std::move(standard.dq);
    facts.max_difference = row_difference(facts.dq, facts.standard);
    return facts;
}

}  // namespace mha
