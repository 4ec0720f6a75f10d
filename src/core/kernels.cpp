// Fast kernels. The matrix product follows the classic blocked scheme:
//   for each KC-deep slice of k:
//     pack b's slice into NR-wide column panels (zero-padded)
//     for each MC-high block of rows: pack a's block into MR-high row panels
//       for each (MR, NR) tile: the micro-kernel keeps MR x NR sums in registers
// The micro-kernel always runs on whole padded panels, so every element of c is
// computed by the same instructions wherever it sits (bit-identical for any split).

#include "core/kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "core/position_bias.h"
#include "core/softcap.h"

namespace mha {

namespace {

// Register tile: MR rows x NR columns of sums. Wider vector units hold more; the
// sizes are the ones g++ 12 keeps in registers (measured: others spill to memory).
#if defined(__AVX512F__)
constexpr std::size_t MR = 6, NR = 32;
constexpr const char* tile_name = "6x32 floats (AVX-512)";
#elif defined(__AVX__)
constexpr std::size_t MR = 3, NR = 32;
constexpr const char* tile_name = "3x32 floats (AVX)";
#else
constexpr std::size_t MR = 4, NR = 8;
constexpr const char* tile_name = "4x8 floats (portable, SSE2 on x86-64)";
#endif
constexpr std::size_t KC = 256;      // depth of one packed slice
constexpr std::size_t MC = 16 * MR;  // rows of a packed block of a
constexpr std::size_t lanes = 8;     // independent partial results in reductions

std::size_t round_up(std::size_t n, std::size_t multiple) {
    return (n + multiple - 1) / multiple * multiple;
}

// Per-thread packing buffers, kept between calls (pool threads live on).
struct Scratch {
    std::vector<float> a, b;
};
Scratch& scratch() {
    thread_local Scratch s;
    return s;
}

// b rows [p0, p0 + kc), all columns -> panels of NR columns, each kc x NR row-major.
void pack_b(const MatrixView& b, std::size_t p0, std::size_t kc, float* out) {
    const std::size_t panels = round_up(b.cols, NR) / NR;
    for (std::size_t panel = 0; panel < panels; ++panel) {
        float* dst = out + panel * kc * NR;
        const std::size_t j0 = panel * NR, width = std::min(NR, b.cols - j0);
        if (width < NR) std::fill(dst, dst + kc * NR, 0.0f);
        if (b.row_stride == 1) {  // b is a transposed view (e.g. Wᵀ, Kᵀ): read along p
            for (std::size_t j = 0; j < width; ++j) {
                const float* src = b.data + (j0 + j) * b.col_stride + p0;
                for (std::size_t p = 0; p < kc; ++p) dst[p * NR + j] = src[p];
            }
        } else {
            for (std::size_t p = 0; p < kc; ++p) {
                const float* src = b.data + (p0 + p) * b.row_stride + j0 * b.col_stride;
                for (std::size_t j = 0; j < width; ++j) dst[p * NR + j] = src[j * b.col_stride];
            }
        }
    }
}

// a rows [i0, i0 + mc), depth [p0, p0 + kc) -> panels of MR rows, each kc x MR.
void pack_a(const MatrixView& a, std::size_t i0, std::size_t mc, std::size_t p0, std::size_t kc,
            float* out) {
    for (std::size_t panel = 0; panel * MR < mc; ++panel) {
        float* dst = out + panel * kc * MR;
        const std::size_t r0 = i0 + panel * MR, height = std::min(MR, i0 + mc - r0);
        if (height < MR) std::fill(dst, dst + kc * MR, 0.0f);
        for (std::size_t i = 0; i < height; ++i) {
            const float* src = a.data + (r0 + i) * a.row_stride + p0 * a.col_stride;
            for (std::size_t p = 0; p < kc; ++p) dst[p * MR + i] = src[p * a.col_stride];
        }
    }
}

// sums (MR, NR) = a_panel (kc, MR)ᵀ-packed x b_panel (kc, NR)
void micro_kernel(std::size_t kc, const float* a, const float* b, float sums[MR][NR]) {
    float acc[MR][NR] = {};
    for (std::size_t p = 0; p < kc; ++p) {
        const float* ap = a + p * MR;
        const float* bp = b + p * NR;
        for (std::size_t i = 0; i < MR; ++i) {
            for (std::size_t j = 0; j < NR; ++j) acc[i][j] += ap[i] * bp[j];
        }
    }
    std::memcpy(sums, acc, sizeof acc);
}

// c (rows, cols) = or += sums, for the valid corner of a tile.
void store_tile(const float sums[MR][NR], float* c, std::size_t ldc, std::size_t rows,
                std::size_t cols, bool accumulate) {
    for (std::size_t i = 0; i < rows; ++i) {
        float* row = c + i * ldc;
        if (accumulate) {
            for (std::size_t j = 0; j < cols; ++j) row[j] += sums[i][j];
        } else {
            for (std::size_t j = 0; j < cols; ++j) row[j] = sums[i][j];
        }
    }
}

bool all_blocked(float max) { return max == -std::numeric_limits<float>::infinity(); }

}  // namespace

// e^x for x <= 0: 2^n e^r with n = round(x log2 e), |r| <= ln2 / 2, r's series to
// degree 7 (relative error < 1e-7). Below -87 (or -inf) the result is 0.
float exp_nonpositive(float x) {
    const float magic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
    const float t = x * 1.44269504f + magic;
    const float n = t - magic;
    const float r = (x - n * 0.693145752f) - n * 1.42860677e-6f;  // ln 2 in two parts
    float p = 1.0f / 5040;
    p = p * r + 1.0f / 720;
    p = p * r + 1.0f / 120;
    p = p * r + 1.0f / 24;
    p = p * r + 1.0f / 6;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    std::uint32_t t_bits, magic_bits;
    std::memcpy(&t_bits, &t, sizeof t);
    std::memcpy(&magic_bits, &magic, sizeof magic);
    const std::uint32_t scale_bits = (t_bits - magic_bits + 127u) << 23;  // 2^n
    float two_n;
    std::memcpy(&two_n, &scale_bits, sizeof two_n);
    return x < -87.0f ? 0.0f : p * two_n;
}

const char* kernel_tile_name() { return tile_name; }

std::size_t gemm_scratch_floats(std::size_t k, std::size_t m) {
    return std::min(k, KC) * (round_up(m, NR) + MC);
}

void gemm(const MatrixView& a, const MatrixView& b, float* c, std::size_t ldc, bool accumulate) {
    const std::size_t n = a.rows, k = a.cols, m = b.cols;
    if (k == 0) {
        if (!accumulate) {
            for (std::size_t i = 0; i < n; ++i) std::fill(c + i * ldc, c + i * ldc + m, 0.0f);
        }
        return;
    }
    Scratch& s = scratch();
    s.b.resize(std::max(s.b.size(), std::min(k, KC) * round_up(m, NR)));
    s.a.resize(std::max(s.a.size(), std::min(k, KC) * MC));
    float sums[MR][NR];
    for (std::size_t p0 = 0; p0 < k; p0 += KC) {
        const std::size_t kc = std::min(KC, k - p0);
        const bool add = accumulate || p0 > 0;
        pack_b(b, p0, kc, s.b.data());
        for (std::size_t i0 = 0; i0 < n; i0 += MC) {
            const std::size_t mc = std::min(MC, n - i0);
            pack_a(a, i0, mc, p0, kc, s.a.data());
            for (std::size_t j = 0; j < m; j += NR) {
                const float* b_panel = s.b.data() + j / NR * kc * NR;
                for (std::size_t i = 0; i < mc; i += MR) {
                    micro_kernel(kc, s.a.data() + i / MR * kc * MR, b_panel, sums);
                    store_tile(sums, c + (i0 + i) * ldc + j, ldc, std::min(MR, mc - i),
                               std::min(NR, m - j), add);
                }
            }
        }
    }
}

void linear_rows_fast(const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& y,
                      std::size_t row_begin, std::size_t row_end) {
    const std::size_t in = w.size(1), out = w.size(0);
    const MatrixView rows{x.data() + row_begin * in, row_end - row_begin, in, in, 1};
    const MatrixView w_t = MatrixView{w.data(), out, in, in, 1}.transposed();  // (in, out)
    float* y_rows = y.data() + row_begin * out;
    gemm(rows, w_t, y_rows, out);
    if (bias.empty()) return;
    for (std::size_t r = 0; r < rows.rows; ++r) {
        float* y_row = y_rows + r * out;
        for (std::size_t o = 0; o < out; ++o) y_row[o] += bias.data()[o];
    }
}

void scale_mask_tile(float* tile, std::size_t ld, std::size_t row0, std::size_t rows,
                     std::size_t col0, std::size_t cols, float factor, const HeadMask& mask) {
    const float blocked = -std::numeric_limits<float>::infinity();
    for (std::size_t r = 0; r < rows; ++r) {
        float* row = tile + r * ld;
        for (std::size_t j = 0; j < cols; ++j) row[j] *= factor;
        if (mask.softcap > 0.0) softcap(row, cols, mask.softcap);
        if (mask.attn != nullptr) {
            const float* add = mask.attn + (row0 + r) * mask.m + col0;
            for (std::size_t j = 0; j < cols; ++j) row[j] += add[j];
        }
        if (mask.padding != nullptr) {
            for (std::size_t j = 0; j < cols; ++j) row[j] += mask.padding[col0 + j];
        }
        const ScoreBlock block{row, 1, cols, ld, row0 + r + mask.m - mask.n, col0};
        if (mask.alibi_slope != 0.0) add_alibi(block, mask.alibi_slope);
        const std::size_t end = mask.key_end(row0 + r);
        for (std::size_t j = std::max(end, col0); j < col0 + cols; ++j) row[j - col0] = blocked;
        if (mask.window > 0) apply_window(block, {mask.window, mask.sinks});
    }
}

float max_of(const float* values, std::size_t n) {
    float lane[lanes];
    std::fill(lane, lane + lanes, -std::numeric_limits<float>::infinity());
    std::size_t i = 0;
    for (; i + lanes <= n; i += lanes) {
        for (std::size_t l = 0; l < lanes; ++l) lane[l] = std::max(lane[l], values[i + l]);
    }
    for (; i < n; ++i) lane[0] = std::max(lane[0], values[i]);
    return *std::max_element(lane, lane + lanes);
}

float exp_shifted(float* values, std::size_t n, float shift) {
    float lane[lanes] = {};
    std::size_t i = 0;
    for (; i + lanes <= n; i += lanes) {
        for (std::size_t l = 0; l < lanes; ++l) {
            values[i + l] = exp_nonpositive(values[i + l] - shift);
            lane[l] += values[i + l];
        }
    }
    for (; i < n; ++i) {
        values[i] = exp_nonpositive(values[i] - shift);
        lane[0] += values[i];
    }
    float sum = 0.0f;
    for (float part : lane) sum += part;
    return sum;
}

std::size_t scale_mask_softmax(float* scores, float factor, const HeadMask& mask,
                               bool zero_masked_rows) {
    if (mask.m == 0) return 0;  // no key at all: empty rows, none of them blocked
    scale_mask_tile(scores, mask.m, 0, mask.n, 0, mask.m, factor, mask);
    std::size_t masked = 0;
    for (std::size_t r = 0; r < mask.n; ++r) {
        float* row = scores + r * mask.m;
        const float max = max_of(row, mask.m);
        if (all_blocked(max)) {
            const float fill = zero_masked_rows ? 0.0f : std::numeric_limits<float>::quiet_NaN();
            std::fill(row, row + mask.m, fill);
            ++masked;
            continue;
        }
        const float inverse = 1.0f / exp_shifted(row, mask.m, max);
        for (std::size_t j = 0; j < mask.m; ++j) row[j] *= inverse;
    }
    return masked;
}

}  // namespace mha
