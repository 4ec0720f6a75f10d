// FlashAttention-2's backward for one (batch, head) unit, on the gemm of kernels.h:
//   D = rowsum(dO ∘ O), summed as gemm sums an element of dP         (N)
//   for each tile of 256 keys (outer), for each tile of 64 queries that sees any of them:
//     S = Q_t K_tᵀ;  dP = dO_t V_tᵀ                                  (64, 256) each
//     P = e^(scale, cap, mask(S) − lse);  dS = P ∘ (dP − D) · cap' · factor
//     dV_t += Pᵀ dO_t;  dQ_t += dS K_t;  dK_t += dSᵀ Q_t              transposed views, no copy
// The same tiles serve every product: Pᵀ and dSᵀ are views that gemm's packing reads across.

#include "core/kernels/streaming_backward.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/checked.h"
#include "core/kernels/streaming.h"
#include "core/ops/softcap.h"
#include "core/tensor/scratch.h"

namespace mha {

namespace {

constexpr float minus_inf = -std::numeric_limits<float>::infinity();

// One thread's buffers, kept between units (pool threads live on); they only grow.
struct BackwardScratch {
    ScratchBuffer s, dp;  // (stream_query_tile, stream_key_tile) each: P, then dS in dp
    ScratchBuffer d;      // (N) D = rowsum(dO ∘ O)
};
BackwardScratch& backward_scratch() {
    thread_local BackwardScratch s;
    return s;
}

// Rows [first, first + count) of m.
MatrixView rows_of(const MatrixView& m, std::size_t first, std::size_t count) {
    return {m.data + first * m.row_stride, count, m.cols, m.row_stride, m.col_stride};
}

// rows (count) rows of `cols` floats, ld apart, set to value.
void fill_rows(float* data, std::size_t ld, std::size_t count, std::size_t cols, float value) {
    for (std::size_t r = 0; r < count; ++r) std::fill(data + r * ld, data + r * ld + cols, value);
}

// Whether the causal rule or the window blocks every key of [k0, k0 + kt) for every query of
// [q0, q0 + qt): the last query sees the most keys on the right, the first the most on the left.
bool outside_band(const HeadMask& mask, std::size_t q0, std::size_t qt, std::size_t k0,
                  std::size_t kt) {
    if (mask.key_end(q0 + qt - 1) <= k0) return true;
    const std::size_t window = mask.masks->window;
    if (window == 0 || k0 < mask.masks->sinks || q0 + mask.m < mask.n) return false;
    const std::size_t position = q0 + mask.m - mask.n;  // of the first query
    return k0 + kt - 1 + window <= position;            // every key at or before p − W
}

}  // namespace

float row_d(const MatrixView& d_o, const MatrixView& context, std::size_t i) {
    float d = 0.0f;
    gemm_naive(rows_of(d_o, i, 1), rows_of(context, i, 1).transposed(), &d, 1, false);
    return d;
}

void softmax_backward_tile(float* s, float* dp, std::size_t ld, std::size_t q0, std::size_t rows,
                           std::size_t k0, std::size_t cols, float factor, const HeadMask& mask,
                           const float* lse, const float* d) {
    const double cap = mask.masks->softcap;
    float cap_slope[stream_key_tile];  // 1 − tanh²(scaled / C) of one row's keys
    for (std::size_t r = 0; r < rows; ++r) {
        float* p = s + r * ld;
        float* ds = dp + r * ld;
        const float row_lse = lse[r];
        if (row_lse == minus_inf) {  // every key blocked: no weight, no gradient through here
            std::fill(p, p + cols, 0.0f);
            std::fill(ds, ds + cols, 0.0f);
            continue;
        }
        if (cap > 0.0) softcap_slopes(p, cols, factor, cap, cap_slope);
        scale_mask_tile(p, ld, q0 + r, 1, k0, cols, factor, mask);
        const float row_d = d[r];
        for (std::size_t j = 0; j < cols; ++j) {
            p[j] = exp_nonpositive(std::min(p[j] - row_lse, 0.0f));
            ds[j] = p[j] * (ds[j] - row_d);
        }
        for (std::size_t j = 0; cap > 0.0 && j < cols; ++j) ds[j] *= cap_slope[j];
        for (std::size_t j = 0; j < cols; ++j) ds[j] *= factor;
    }
}

std::size_t attend_backward_streaming(const MatrixView& q, const MatrixView& k, const MatrixView& v,
                                      const HeadMask& mask, float factor, bool zero_masked_rows,
                                      const UnitForward& forward, const MatrixView& d_o,
                                      const UnitGradients& grads) {
    const std::size_t n = q.rows, m = k.rows, d_k = q.cols, d_v = v.cols;
    constexpr std::size_t qt_max = stream_query_tile, ld = stream_key_tile;
    fill_rows(grads.dq, grads.ldq, n, d_k, 0.0f);
    fill_rows(grads.dk, grads.ldk, m, d_k, 0.0f);
    fill_rows(grads.dv, grads.ldv, m, d_v, 0.0f);
    if (m == 0 || n == 0) return 0;  // no key: the output is a constant zero
    BackwardScratch& scratch = backward_scratch();
    float* const s = scratch.s.floats(qt_max * ld);
    float* const dp = scratch.dp.floats(qt_max * ld);
    float* const d = scratch.d.floats(n);
    std::size_t blocked = 0;
    for (std::size_t i = 0; i < n; ++i) {
        d[i] = row_d(d_o, forward.context, i);
        blocked += forward.lse[i] == minus_inf;
    }
    for (std::size_t k0 = 0; k0 < m; k0 += ld) {
        const std::size_t kt = std::min(ld, m - k0);
        const MatrixView k_t = rows_of(k, k0, kt), v_t = rows_of(v, k0, kt);
        for (std::size_t q0 = 0; q0 < n; q0 += qt_max) {
            const std::size_t qt = std::min(qt_max, n - q0);
            if (outside_band(mask, q0, qt, k0, kt)) continue;
            const MatrixView q_t = rows_of(q, q0, qt), d_o_t = rows_of(d_o, q0, qt);
            gemm(q_t, k_t.transposed(), s, ld);     // S (qt, kt)
            gemm(d_o_t, v_t.transposed(), dp, ld);  // dP (qt, kt)
            softmax_backward_tile(s, dp, ld, q0, qt, k0, kt, factor, mask, forward.lse + q0,
                                  d + q0);
            const MatrixView p{s, qt, kt, ld, 1}, ds{dp, qt, kt, ld, 1};
            gemm(p.transposed(), d_o_t, grads.dv + k0 * grads.ldv, grads.ldv, true);  // (kt, d_v)
            gemm(ds, k_t, grads.dq + q0 * grads.ldq, grads.ldq, true);                // (qt, d_k)
            gemm(ds.transposed(), q_t, grads.dk + k0 * grads.ldk, grads.ldk, true);   // (kt, d_k)
        }
    }
    if (blocked > 0 && !zero_masked_rows) {  // NaN weights reach every key's dK and dV
        const float nan = std::numeric_limits<float>::quiet_NaN();
        for (std::size_t i = 0; i < n; ++i) {
            if (forward.lse[i] == minus_inf) fill_rows(grads.dq + i * grads.ldq, 0, 1, d_k, nan);
        }
        fill_rows(grads.dk, grads.ldk, m, d_k, nan);
        fill_rows(grads.dv, grads.ldv, m, d_v, nan);
    }
    return blocked;
}

std::uint64_t streaming_backward_scratch_floats(std::size_t n, std::size_t d_k, std::size_t d_v) {
    const std::string what = "the memory for this configuration";
    const std::size_t qt = stream_query_tile, kt = stream_key_tile;
    const std::size_t packing =
        std::max({gemm_scratch_floats(d_k, kt), gemm_scratch_floats(d_v, kt),  // S, dP
                  gemm_scratch_floats(qt, std::max(d_k, d_v)),                 // dV, dK
                  gemm_scratch_floats(kt, d_k)});                              // dQ
    return checked_sum({2 * qt * kt, n, packing}, what);
}

}  // namespace mha
