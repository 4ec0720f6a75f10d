// The online softmax, one tile of queries at a time:
//   for each tile of keys (stopping early once a causal mask blocks the rest):
//     S = Q_tile K_tileᵀ, scaled and masked              (rows, keys)
//     new_max = max(row_max, max S);  c = e^(row_max - new_max)
//     P = e^(S - new_max);  row_sum = row_sum · c + Σ P
//     O = O · c + P V_tile
//   context = O / row_sum
// Every row's result depends only on its own queries and keys, so splitting
// units over threads changes no bit.

#include "core/streaming.h"

#include <algorithm>
#include <limits>
#include <vector>

namespace mha {

namespace {

constexpr float minus_inf = -std::numeric_limits<float>::infinity();

// The rows of a view from `first`, `count` of them.
MatrixView rows_of(const MatrixView& m, std::size_t first, std::size_t count) {
    return {m.data + first * m.row_stride, count, m.cols, m.row_stride, m.col_stride};
}

// Folds one tile of masked scores into the running max and sum of each row and
// turns it into P; rescales the rows of o that the new maximum changed.
void online_softmax_step(float* scores, std::size_t rows, std::size_t cols, float* row_max,
                         float* row_sum, float* o, std::size_t d_k) {
    for (std::size_t r = 0; r < rows; ++r) {
        float* s = scores + r * stream_key_tile;
        const float new_max = std::max(row_max[r], max_of(s, cols));
        if (new_max == minus_inf) {  // nothing visible yet: P is 0
            std::fill(s, s + cols, 0.0f);
            continue;
        }
        const float shrink = exp_nonpositive(row_max[r] - new_max);  // 0 while row_max is -inf
        row_sum[r] = row_sum[r] * shrink + exp_shifted(s, cols, new_max);
        if (shrink != 1.0f) {
            for (std::size_t j = 0; j < d_k; ++j) o[r * d_k + j] *= shrink;
        }
        row_max[r] = new_max;
    }
}

}  // namespace

std::size_t streaming_scratch_floats(std::size_t d_k) {
    return stream_query_tile * (stream_key_tile + d_k + 2) +
           std::max(gemm_scratch_floats(d_k, stream_key_tile),
                    gemm_scratch_floats(stream_key_tile, d_k));
}

std::size_t attend_streaming(const MatrixView& q, const MatrixView& k, const MatrixView& v,
                             const HeadMask& mask, float factor, bool zero_masked_rows,
                             float* context, std::size_t ldc) {
    const std::size_t n = q.rows, m = k.rows, d_k = q.cols;
    std::vector<float> scores(stream_query_tile * stream_key_tile);
    std::vector<float> o(stream_query_tile * d_k);
    std::vector<float> row_max(stream_query_tile), row_sum(stream_query_tile);
    std::size_t masked = 0;
    for (std::size_t q0 = 0; q0 < n; q0 += stream_query_tile) {
        const std::size_t rows = std::min(stream_query_tile, n - q0);
        std::fill(o.begin(), o.end(), 0.0f);
        std::fill(row_max.begin(), row_max.end(), minus_inf);
        std::fill(row_sum.begin(), row_sum.end(), 0.0f);
        const std::size_t key_end = mask.key_end(q0 + rows - 1);  // keys past it are blocked
        for (std::size_t k0 = 0; k0 < key_end; k0 += stream_key_tile) {
            const std::size_t cols = std::min(stream_key_tile, m - k0);
            // 6: (rows, d_k) x (d_k, cols) -> (rows, cols)
            gemm(rows_of(q, q0, rows), rows_of(k, k0, cols).transposed(), scores.data(),
                 stream_key_tile);
            // 7, 8
            scale_mask_tile(scores.data(), stream_key_tile, q0, rows, k0, cols, factor, mask);
            // 9, online
            online_softmax_step(scores.data(), rows, cols, row_max.data(), row_sum.data(), o.data(),
                                d_k);
            // 10: O += (rows, cols) x (cols, d_k)
            gemm({scores.data(), rows, cols, stream_key_tile, 1}, rows_of(v, k0, cols), o.data(),
                 d_k, true);
        }
        for (std::size_t r = 0; r < rows; ++r) {
            float* out = context + (q0 + r) * ldc;
            if (m == 0) {  // no key at all: an empty weighted sum, zero as in PyTorch
                std::fill(out, out + d_k, 0.0f);
                continue;
            }
            if (row_max[r] == minus_inf) {
                const float fill =
                    zero_masked_rows ? 0.0f : std::numeric_limits<float>::quiet_NaN();
                std::fill(out, out + d_k, fill);
                ++masked;
                continue;
            }
            const float inverse = 1.0f / row_sum[r];
            for (std::size_t j = 0; j < d_k; ++j) out[j] = o[r * d_k + j] * inverse;
        }
    }
    return masked;
}

}  // namespace mha
