// Fast kernels, written once as templates and built for several CPUs.
//
// The matrix product follows the classic blocked scheme:
//   for each KC-deep slice of k:
//     pack b's slice into NR-wide column panels (zero-padded)
//     for each MC-high block of rows: pack a's block into MR-high row panels
//       for each group of panels that fits in L2:
//         for each MR-high row tile, for each panel of the group:
//           the micro-kernel keeps MR x NR sums in registers
// The micro-kernel always runs on whole padded panels, so every element of c is
// computed by the same operations wherever it sits (bit-identical for any split).
//
// Run-time dispatch: each template is instantiated inside functions carrying the
// compiler's target attribute (AVX-512, AVX2, SSE2, plain), and one table of them
// is chosen at start-up from the CPU's features or MHA_KERNEL. Every variant
// fuses each product into its sum (one rounding: an FMA instruction on AVX2 and AVX-512,
// std::fma on SSE2 and plain), fuses nothing else (the build uses -ffp-contract=off) and
// sums every element in the same order, so all variants give the same bits.

#include "core/kernels/kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>  // declares the vector built-ins add_product takes with g++
#endif

#include "core/error.h"
#include "core/kernels/block_transpose.h"
#include "core/kernels/vector_exp.h"
#include "core/ops/softcap.h"
#include "core/position/position_bias.h"
#include "core/tensor/scratch.h"

// Templates marked this way are compiled inside each variant's target function.
#define MHA_INLINE inline __attribute__((always_inline))

namespace mha {

namespace {

constexpr std::size_t KC = 256;               // depth of one packed slice: the summation order
constexpr std::size_t lanes = 8;              // independent partial results in reductions
constexpr std::size_t widest_nr = 64;         // for the scratch bound
constexpr std::size_t widest_flash_mr = 4;    // the fused attention tile's (nr: widest_nr)
constexpr std::size_t max_vector_bytes = 64;  // AVX-512's registers
constexpr std::size_t mc_rows = 64;           // rows in a block of a, rounded down to whole panels
// Floats of packed right-hand panels (W's in a projection) a row tile meets before the next:
// three quarters of this CPU's L2, so they stay there while the row tiles pass (512 KiB on
// AMD's Zen 3: 384 KiB; 1 MiB on Zen 4: 768 KiB), at most max_group_floats (what memory
// bounds count, the same on every CPU). Unknown L2 sizes count as 512 KiB.
constexpr std::size_t max_group_floats = 192 * 1024;
std::size_t group_floats() {
    static const std::size_t floats = [] {
#ifdef _SC_LEVEL2_CACHE_SIZE  // glibc's
        const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
#else
        const long l2 = 0;
#endif
        const std::size_t bytes = l2 > 0 ? std::size_t(l2) : std::size_t(512) * 1024;
        return std::min(max_group_floats, bytes / 4 * 3 / sizeof(float));
    }();
    return floats;
}
// Rows of a matrix this many floats apart (4 KiB) fall in the same L1 cache sets: gemm packs
// such rows of a (reads_in_place); linear_panels reads x's in place all the same (see there).
constexpr std::size_t set_stride_floats = 1024;

MHA_INLINE std::size_t round_up(std::size_t n, std::size_t multiple) {
    return (n + multiple - 1) / multiple * multiple;
}

// The panels (nr outputs each, all `in` deep) linear_panels runs together for `rows` rows on
// an (mr, nr) tile: a group that fits in L2, or one panel at a time when the rows make a
// single block of mc_rows.
std::size_t group_panels(std::size_t in, std::size_t rows, std::size_t mr, std::size_t nr) {
    if (rows <= mc_rows / mr * mr) return 1;
    return std::max<std::size_t>(1, group_floats() / (std::max<std::size_t>(1, in) * nr));
}

// Per-thread packing buffers, kept between calls (pool threads live on).
struct Scratch {
    ScratchBuffer a, b;
};
Scratch& scratch() {
    thread_local Scratch s;
    return s;
}

// The depths [lo, hi) of a's rows [r0, r1) that may hold non-zeros under `skip`, within
// [p0, p1); lo >= hi when none may.
MHA_INLINE void live_depths(const GemmSkip& skip, std::size_t r0, std::size_t r1, std::size_t p0,
                            std::size_t p1, std::size_t& lo, std::size_t& hi) {
    const std::ptrdiff_t s = skip.shift;
    lo = p0;
    hi = p1;
    if (skip.kind == GemmSkip::RowEnds) {                   // a(i, p) = 0 for p > i + s
        const std::ptrdiff_t end = std::ptrdiff_t(r1) + s;  // one past the last row's last p
        hi = end <= std::ptrdiff_t(p0) ? p0 : std::min(p1, std::size_t(end));
    } else if (skip.kind == GemmSkip::RowStarts) {  // a(i, p) = 0 for p < i - s
        const std::ptrdiff_t start = std::ptrdiff_t(r0) - s;
        lo = start <= std::ptrdiff_t(p0) ? p0 : std::min(p1, std::size_t(start));
    }
}

// b rows [p0, p0 + kc), all columns -> panels of NR columns, each kc x NR row-major.
template <std::size_t NR>
MHA_INLINE void pack_b(const MatrixView& b, std::size_t p0, std::size_t kc, float* out) {
    if (b.col_stride == 1 && b.row_stride != 1) {
        // Rows side by side (X in dW = dYᵀ X, V, dO): each row is read once, in order, and
        // dealt out to the panels. Read panel by panel, each panel took one line of every row
        // of the slice, rows a stride apart: 28% of the samples of dYᵀ X at (64, 4096, 256).
        const std::size_t whole = b.cols / NR, rest = b.cols % NR;
        for (std::size_t p = 0; p < kc; ++p) {
            const float* src = b.data + (p0 + p) * b.row_stride;
            float* dst = out + p * NR;
            for (std::size_t panel = 0; panel < whole; ++panel)
                std::memcpy(dst + panel * kc * NR, src + panel * NR, NR * sizeof(float));
            if (rest == 0) continue;
            float* last = dst + whole * kc * NR;
            std::copy(src + whole * NR, src + b.cols, last);
            std::fill(last + rest, last + NR, 0.0f);
        }
        return;
    }
    const std::size_t panels = round_up(b.cols, NR) / NR;
    for (std::size_t panel = 0; panel < panels; ++panel) {
        float* dst = out + panel * kc * NR;
        const std::size_t j0 = panel * NR, width = std::min(NR, b.cols - j0);
        if (width < NR) std::fill(dst, dst + kc * NR, 0.0f);
        if (b.row_stride == 1 && width == NR && NR % 8 == 0) {  // Kᵀ, Vᵀ, Wᵀ: 8 x 8 blocks
            for (std::size_t j8 = 0; j8 < NR; j8 += 8) {        // turned in registers
                const float* src = b.data + (j0 + j8) * b.col_stride + p0;
                std::size_t p = 0;
                for (; p + 8 <= kc; p += 8) {
                    Floats8 cols[8];
                    block_columns(src + p, b.col_stride, cols);
                    for (std::size_t c = 0; c < 8; ++c)
                        std::memcpy(dst + (p + c) * NR + j8, &cols[c], sizeof cols[c]);
                }
                for (; p < kc; ++p) {
                    for (std::size_t j = 0; j < 8; ++j)
                        dst[p * NR + j8 + j] = src[j * b.col_stride + p];
                }
            }
        } else if (b.row_stride == 1) {  // b is a transposed view (e.g. Wᵀ, Kᵀ): read along p
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
template <std::size_t MR>
MHA_INLINE void pack_a(const MatrixView& a, std::size_t i0, std::size_t mc, std::size_t p0,
                       std::size_t kc, float* out) {
    // A transposed view (Pᵀ, dSᵀ, dYᵀ) holds a depth's rows side by side: each depth is read
    // once for all the panels, a panel's row as one copy of constant size (panel by panel,
    // with a loop of 6 that went float by float, Pᵀ dO at 128 x 128 x 16 ran at 44 GFLOP/s;
    // now 57).
    if (a.row_stride == 1) {
        const std::size_t whole = mc / MR, rest = mc % MR;
        float* last = out + whole * kc * MR;
        if (rest > 0) std::fill(last, last + kc * MR, 0.0f);
        for (std::size_t p = 0; p < kc; ++p) {
            const float* src = a.data + (p0 + p) * a.col_stride + i0;
            for (std::size_t panel = 0; panel < whole; ++panel)
                std::memcpy(out + panel * kc * MR + p * MR, src + panel * MR, MR * sizeof(float));
            std::copy(src + whole * MR, src + mc, last + p * MR);
        }
        return;
    }
    for (std::size_t panel = 0; panel * MR < mc; ++panel) {
        float* dst = out + panel * kc * MR;
        const std::size_t r0 = i0 + panel * MR, height = std::min(MR, i0 + mc - r0);
        if (height < MR) std::fill(dst, dst + kc * MR, 0.0f);
        if (a.col_stride == 1 && height == MR && MR % 4 == 0) {
            // four rows read side by side, each written in order: rows that share cache sets
            // (the only row-major a packed whole) would evict each other if more were read
            for (std::size_t i4 = 0; i4 < MR; i4 += 4) {
                const float* src = a.data + (r0 + i4) * a.row_stride + p0;
                for (std::size_t p = 0; p < kc; ++p) {
                    for (std::size_t i = 0; i < 4; ++i)
                        dst[p * MR + i4 + i] = src[i * a.row_stride + p];
                }
            }
            continue;
        }
        for (std::size_t i = 0; i < height; ++i) {
            const float* src = a.data + (r0 + i) * a.row_stride + p0 * a.col_stride;
            for (std::size_t p = 0; p < kc; ++p) dst[p * MR + i] = src[p * a.col_stride];
        }
    }
}

// c (rows, cols) = or += the valid corner of a tile of sums.
template <std::size_t MR, std::size_t NR>
MHA_INLINE void store_tile(const float (&acc)[MR][NR], float* c, std::size_t ldc, std::size_t rows,
                           std::size_t cols, bool accumulate) {
    for (std::size_t i = 0; i < rows; ++i) {
        float* row = c + i * ldc;
        if (accumulate) {
            for (std::size_t j = 0; j < cols; ++j) row[j] += acc[i][j];
        } else {
            for (std::size_t j = 0; j < cols; ++j) row[j] = acc[i][j];
        }
    }
}

// A tile's operands: a(i, p) at a[i · a_i + p · a_p] (a packed panel has a_i = 1 and
// a_p = MR; a read in place, its view's strides) and b's packed panel (kc, NR).
struct TileOperands {
    const float* a;
    std::size_t a_i, a_p;
    const float* b;
};

// A variant's vector registers, in bytes: a tile's rows are held in vectors this wide (or as
// wide as the row, if narrower). With AVX-512's, each product reads a(i, p) from memory
// itself: its multiply-add takes one float from memory and broadcasts it on the way ({1to16}),
// where a broadcast instruction of its own takes a slot of the floating-point pipes on AMD's
// Zen 4 (a 4x64 tile in L1 ran at 79% of the multiply-add peak with one broadcast a row, 98%
// with none). Compilers fold a load into the multiply only when it feeds that one multiply,
// and merge loads of one address; so each product reads a(i, p) through a pointer passed
// through an empty asm statement, which emits nothing and hides that the addresses repeat.
// Narrower registers have no such multiply: a row's products share one broadcast. The
// products and sums are the same either way, so are the bits.
enum class Registers : std::size_t { Sse2 = 16, Avx2 = 32, Avx512 = 64 };

// sum += b · a in each lane, rounded once: a fused multiply-add. Where the variant's target has
// FMA (AVX2's, AVX-512's) it is one vfmadd instruction a vector; where it has none (plain, SSE2)
// std::fma calls fmaf a lane: slow, the reference, the same bits. clang++ builds std::fma on the
// lanes as one vector instruction for the target it is inlined into (once the loops around it
// are unrolled whole: unrolled by its own measure, the AVX-512 tile's sums went through memory);
// g++ 12 leaves one scalar instruction a lane, so g++ takes the vector built-ins behind
// _mm256_fmadd_ps and _mm512_fmadd_ps (the intrinsics themselves cannot be inlined into a
// template built for no target). Nothing else is fused: the build keeps -ffp-contract=off.
// g++'s -Wpsabi note (an AVX-wide vector returned by a function built without AVX) does not
// apply: this is always inlined into the variant's own function.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
template <Registers R, class Vector>
MHA_INLINE void add_product(Vector& sum, const Vector& b, float a) {
#if defined(__GNUC__) && !defined(__clang__) && (defined(__x86_64__) || defined(__i386__))
    if constexpr (R != Registers::Sse2 && sizeof(Vector) == 32) {
        sum = __builtin_ia32_vfmaddps256(b, a - Vector{}, sum);  // a - 0 is a in every lane
        return;
    } else if constexpr (R != Registers::Sse2 && sizeof(Vector) == 64) {
        sum = __builtin_ia32_vfmaddps512_mask(b, a - Vector{}, sum, -1, _MM_FROUND_CUR_DIRECTION);
        return;
    }
#endif
#pragma GCC unroll 16
    for (std::size_t l = 0; l < sizeof(Vector) / sizeof(float); ++l)
        sum[l] = std::fma(b[l], a, sum[l]);
}
#pragma GCC diagnostic pop

// acc (MR, NR) = a (MR, kc) x b_panel (kc, NR), each sum from +0 with p ascending, each product
// fused into it (add_product); acc is written whole and never read before, so a tile's sums
// need no zero-filled array in memory. Every tile keeps a row in vectors of the registers'
// width, or as wide as the row (vectors wider than the registers went through memory: the
// AVX2 build's 4x16 attention tile ran at a seventeenth of AVX-512's).
template <std::size_t MR, std::size_t NR, Registers R>
MHA_INLINE void add_products(std::size_t kc, const float* a, std::size_t a_i, std::size_t a_p,
                             const float* b, float (&acc)[MR][NR]) {
    constexpr std::size_t row_bytes = NR * sizeof(float);
    static_assert(R == Registers::Avx512 || row_bytes <= max_vector_bytes,
                  "a row in at most four vectors");
    constexpr std::size_t width = std::min(row_bytes, std::size_t(R));
    typedef float Vector __attribute__((vector_size(width)));
    constexpr std::size_t per_row = row_bytes / width;
    static_assert(per_row * width == row_bytes, "whole vectors a row");
    Vector sums[MR][per_row] = {};
    for (std::size_t p = 0; p < kc; ++p) {
        Vector bp[per_row];  // one copy a vector: g++ sends a whole-array copy through memory
        for (std::size_t v = 0; v < per_row; ++v)
            std::memcpy(&bp[v], b + p * NR + v * (NR / per_row), sizeof bp[v]);
#pragma GCC unroll 16
        for (std::size_t i = 0; i < MR; ++i) {
            if constexpr (R == Registers::Avx512) {
#pragma GCC unroll 16
                for (std::size_t v = 0; v < per_row; ++v) {
                    const float* ai = a + i * a_i + p * a_p;
                    __asm__ volatile("" : "+r"(ai));  // a load of its own (see Registers)
                    add_product<R>(sums[i][v], bp[v], *ai);
                }
            } else {
                const float ai = a[i * a_i + p * a_p];
                for (std::size_t v = 0; v < per_row; ++v) add_product<R>(sums[i][v], bp[v], ai);
            }
        }
    }
    std::memcpy(acc, sums, sizeof sums);
}

// c's whole (MR, NR) tile = or += acc, a vector of the registers' width at a time, as
// add_products wrote acc: g++ copied a row of 16 as 8 + 4 + 2 + 1 + 1 floats, loads that
// cannot take their data from the vector stores just made, and at depth 16 (Q Kᵀ at d_k 16)
// the 6x16 tile's stores took as long as its products. The same sums: the same bits.
template <std::size_t MR, std::size_t NR, Registers R>
MHA_INLINE void store_whole_tile(const float (&acc)[MR][NR], float* c, std::size_t ldc,
                                 bool accumulate) {
    constexpr std::size_t width = std::min(NR * sizeof(float), std::size_t(R));
    constexpr std::size_t step = width / sizeof(float);
    static_assert(NR % step == 0, "whole vectors a row");
    typedef float Vector __attribute__((vector_size(width)));
    for (std::size_t i = 0; i < MR; ++i) {
        float* row = c + i * ldc;
        for (std::size_t j = 0; j < NR; j += step) {
            Vector sum;
            std::memcpy(&sum, &acc[i][j], width);
            if (accumulate) {
                Vector before;
                std::memcpy(&before, row + j, width);
                sum = before + sum;
            }
            std::memcpy(row + j, &sum, width);
        }
    }
}

// The same on packed panels: a_panel (kc, MR)ᵀ-packed, b_panel (kc, NR).
template <std::size_t MR, std::size_t NR, Registers R>
MHA_INLINE void add_products(std::size_t kc, const float* a, const float* b, float (&acc)[MR][NR]) {
    add_products<MR, NR, R>(kc, a, 1, MR, b, acc);
}

// c (rows, cols) = or += the tile's product, for the valid corner of the tile; the sums stay
// in registers until the end. A packed a takes a loop with constant strides.
template <std::size_t MR, std::size_t NR, Registers R>
MHA_INLINE void micro_kernel(std::size_t kc, const TileOperands& t, float* c, std::size_t ldc,
                             std::size_t rows, std::size_t cols, bool accumulate) {
    float acc[MR][NR];  // add_products writes it whole
    if (t.a_i == 1 && t.a_p == MR)
        add_products<MR, NR, R>(kc, t.a, t.b, acc);
    else
        add_products<MR, NR, R>(kc, t.a, t.a_i, t.a_p, t.b, acc);
    if (rows == MR && cols == NR)
        store_whole_tile<MR, NR, R>(acc, c, ldc, accumulate);
    else
        store_tile(acc, c, ldc, rows, cols, accumulate);
}

// The same on packed panels.
template <std::size_t MR, std::size_t NR, Registers R>
MHA_INLINE void micro_kernel(std::size_t kc, const float* a, const float* b, float* c,
                             std::size_t ldc, std::size_t rows, std::size_t cols, bool accumulate) {
    micro_kernel<MR, NR, R>(kc, TileOperands{a, 1, MR, b}, c, ldc, rows, cols, accumulate);
}

// Whether output columns from j0 on are unwanted for every row of [r0, r1) under `skip`.
MHA_INLINE bool unwanted_columns(const GemmSkip& skip, std::size_t r1, std::size_t j0) {
    return skip.kind == GemmSkip::OutputEnds &&
           std::ptrdiff_t(j0) > std::ptrdiff_t(r1) - 1 + skip.shift;
}

// c (rows, cols) = 0, when a tile's products are all skipped and nothing came before them.
MHA_INLINE void zero_tile(float* c, std::size_t ldc, std::size_t rows, std::size_t cols) {
    for (std::size_t i = 0; i < rows; ++i) std::fill(c + i * ldc, c + i * ldc + cols, 0.0f);
}

// Whether gemm reads a where it is: when its rows lie contiguous at a stride that spreads them
// over the cache's sets, MR rows at a time stream through the cache as well as a packed panel
// does. A transposed view (dYᵀ, Pᵀ, dSᵀ) is packed: read in place, each step of the depth
// reads a line of its own, a stride apart (2 KiB for dYᵀ at 512 outputs), and a slice's 256
// lines fell into two of L1's 64 sets (cachegrind, dW = dYᵀ X at (1024, 512, 512) with the
// group order below: L1 misses 13.2 -> 7.4 million, L2's 3.3 -> 1.0).
MHA_INLINE bool reads_in_place(const MatrixView& a) {
    return a.col_stride == 1 && a.row_stride % set_stride_floats != 0;
}

// The blocked product on blocks of MC rows. Under `skip`, the depths of a row panel where a is
// zero are left out of its sums (a sum that starts at +0 and adds only zero products stays +0
// and a non-zero sum plus ±0 is itself: the same bits) and unwanted output tiles are skipped.
template <std::size_t MR, std::size_t NR, Registers R>
MHA_INLINE void gemm_blocked_t(const MatrixView& a, const MatrixView& b, float* c, std::size_t ldc,
                               bool accumulate, const GemmSkip& skip) {
    constexpr std::size_t MC = mc_rows / MR * MR;
    const std::size_t n = a.rows, k = a.cols, m = b.cols;
    if (k == 0) {
        if (!accumulate) zero_tile(c, ldc, n, m);
        return;
    }
    // a is read where it is (reads_in_place); only its partial last panel, which needs zero
    // padding, is packed then. b is always packed: read in place, its rows lie a row stride
    // apart and the tile's loads fight over the same cache sets (measured slower).
    const bool a_in_place = reads_in_place(a);
    Scratch& s = scratch();
    float* packed_b = s.b.floats(std::min(k, KC) * round_up(m, NR));
    float* packed_a = s.a.floats(std::min(k, KC) * std::min(MC, round_up(n, MR)));
    for (std::size_t p0 = 0; p0 < k; p0 += KC) {
        const std::size_t kc = std::min(KC, k - p0);
        const bool add = accumulate || p0 > 0;
        pack_b<NR>(b, p0, kc, packed_b);
        // each row tile meets a group of b's panels that stays in L2 (as linear_panels_t), all
        // blocks of rows in turn: with the blocks outside, the whole slice of b (512 KiB at m =
        // 512) streamed past each block, from beyond a 512 KiB L2
        const std::size_t group = std::max(NR, group_floats() / (kc * NR) * NR);
        for (std::size_t j0 = 0; j0 < m; j0 += group) {
            for (std::size_t i0 = 0; i0 < n; i0 += MC) {
                const std::size_t mc = std::min(MC, n - i0);
                std::size_t lo = 0, hi = 0;  // the block's live depths: only they are packed
                live_depths(skip, i0, i0 + mc, p0, p0 + kc, lo, hi);
                const std::size_t whole = a_in_place ? mc / MR * MR : 0;  // rows read in place
                if (hi > lo && whole < mc)
                    pack_a<MR>(a, i0 + whole, mc - whole, lo, hi - lo,
                               packed_a + whole * (hi - lo));
                for (std::size_t i = 0; i < mc; i += MR) {
                    for (std::size_t j = j0; j < std::min(m, j0 + group); j += NR) {
                        const float* b_panel = packed_b + j / NR * kc * NR;
                        const std::size_t rows = std::min(MR, mc - i), cols = std::min(NR, m - j);
                        float* tile = c + (i0 + i) * ldc + j;
                        if (unwanted_columns(skip, i0 + i + rows, j)) continue;
                        std::size_t plo = 0, phi = 0;
                        live_depths(skip, i0 + i, i0 + i + rows, lo, hi, plo, phi);
                        if (phi <= plo) {
                            if (!add) zero_tile(tile, ldc, rows, cols);
                            continue;
                        }
                        const float* b_rows = b_panel + (plo - p0) * NR;
                        const TileOperands t =
                            i < whole ? TileOperands{a.data + (i0 + i) * a.row_stride +
                                                         plo * a.col_stride,
                                                     a.row_stride, a.col_stride, b_rows}
                                      : TileOperands{packed_a + i * (hi - lo) + (plo - lo) * MR, 1,
                                                     MR, b_rows};
                        micro_kernel<MR, NR, R>(phi - plo, t, tile, ldc, rows, cols, add);
                    }
                }
            }
        }
    }
}

// c = or += a b on the wide register tile (MR, NR), or on the narrow one (NMR, NNR: one
// vector register a row) for outputs narrower than the wide tile (P V, dS K, Pᵀ dO, dSᵀ Q,
// the linear layers' dX and dW at d_model 64), where the wide tile would pad them with lanes
// of zeros. The narrow tile reads a once per NNR columns: when a must be packed (rows of P
// at N 2048, 8 KiB apart) and the output spans several narrow panels, the wide tile, which
// reads it once, was measured faster. At exactly the wide tile's width it pads nothing: with
// AVX2 (Zen 3) it ran 63 -> 83 GFLOP/s at 512 x 512 x 16 on the wide tile, with SSE2 23 -> 30
// at 128 x 128 x 8; AVX-512's 16x16 tile took the 64-wide outputs on Zen 4, where it was
// measured, and still does. Both sum every element in the same order: the same bits.
template <std::size_t MR, std::size_t NR, std::size_t NMR, std::size_t NNR, Registers R>
MHA_INLINE void gemm_t(const MatrixView& a, const MatrixView& b, float* c, std::size_t ldc,
                       bool accumulate, const GemmSkip& skip) {
    const bool narrow_in_place = b.cols < NR || (R == Registers::Avx512 && b.cols == NR);
    if (b.cols <= NNR || (narrow_in_place && reads_in_place(a)))
        gemm_blocked_t<NMR, NNR, R>(a, b, c, ldc, accumulate, skip);
    else
        gemm_blocked_t<MR, NR, R>(a, b, c, ldc, accumulate, skip);
}

// One NR-wide panel of a projection's outputs: target t's outputs [j0, j0 + width).
struct OutputPanel {
    const LinearTarget* target;
    std::size_t j0, width;

    // Its slice [p0, p0 + kc) of Wᵀ as pack_linear left it, (kc, NR); null if not packed.
    template <std::size_t NR>
    const float* packed(std::size_t in, std::size_t p0) const {
        return target->packed == nullptr ? nullptr : target->packed + j0 * in + p0 * NR;
    }
};

// Panels [begin, end) of the targets, numbered across them in order.
template <std::size_t NR>
MHA_INLINE std::vector<OutputPanel> output_panels(const std::vector<LinearTarget>& targets,
                                                  std::size_t begin, std::size_t end) {
    std::vector<OutputPanel> panels;
    std::size_t index = 0;
    for (const LinearTarget& t : targets) {
        for (std::size_t j0 = 0; j0 < t.out; j0 += NR, ++index) {
            if (index >= begin && index < end) panels.push_back({&t, j0, std::min(NR, t.out - j0)});
        }
    }
    return panels;
}

// Panel q's slice [p0, p0 + kc) of Wᵀ -> (kc, NR) row-major, zero-padded past its width.
template <std::size_t NR>
MHA_INLINE void pack_w_panel(const OutputPanel& panel, std::size_t in, std::size_t p0,
                             std::size_t kc, float* out) {
    const MatrixView w_t{panel.target->w + panel.j0 * in, panel.width, in, in, 1};  // W's rows
    pack_b<NR>(w_t.transposed(), p0, kc, out);
}

// Rows [r0, r1) of the panels' outputs, bias added. The panels go in groups that fit in L2
// (group_floats), each panel whole (all `in` deep, as pack_linear leaves it, or packed here
// just before the group). Each row tile of x meets every panel of the group in turn, its rows
// staying in L1 while W's panels stream past from L2; and a tile runs through all its KC
// slices before the next, so the tile of y it adds each slice's sums to is still in L1
// (slices outermost, y's rows had left the cache by the next slice: 4.7 MB at (512, 768) x
// (768, 2304)), and its bias is added there too. The groups are group_panels' (one panel
// each when the rows make one block of mc_rows). x's rows are read in place, a partial tile
// packed; rows 4 KiB apart too, unlike gemm's a (reads_in_place): a tile's 4 or 6 rows then
// share L1's sets, of 8 ways or more, and packing them anew for each group cost more (where
// `in` is 1024 or GPT-2's 3072, a group holds 2-6 panels: 1.2-1.6x the time on 2 threads).
// Each element is summed by the same micro-kernel, slice after slice, in any order of the
// loops: the same bits.
template <std::size_t MR, std::size_t NR, Registers R>
MHA_INLINE void linear_panels_t(const float* x, std::size_t in,
                                const std::vector<LinearTarget>& targets, std::size_t r0,
                                std::size_t r1, std::size_t panel_begin, std::size_t panel_end) {
    const std::vector<OutputPanel> panels = output_panels<NR>(targets, panel_begin, panel_end);
    if (r0 >= r1 || panels.empty()) return;
    const MatrixView a{x, r1, in, in, 1};
    const std::size_t group = group_panels(in, r1 - r0, MR, NR);
    Scratch& s = scratch();
    float* packed_w = s.b.floats(in * NR * std::min(group, panels.size()));
    float* packed_x = s.a.floats(in * MR);
    std::vector<const float*> w_panels(panels.size());
    for (std::size_t q0 = 0; q0 < panels.size(); q0 += group) {
        const std::size_t q1 = std::min(panels.size(), q0 + group);
        for (std::size_t q = q0; q < q1; ++q) {
            w_panels[q] = panels[q].packed<NR>(in, 0);
            if (w_panels[q] != nullptr) continue;
            float* w_panel = packed_w + (q - q0) * in * NR;
            pack_w_panel<NR>(panels[q], in, 0, in, w_panel);
            w_panels[q] = w_panel;
        }
        for (std::size_t i = r0; i < r1; i += MR) {  // rows [i, i + MR) of x
            const std::size_t rows = std::min(MR, r1 - i);
            const bool packed = rows < MR;
            if (packed) pack_a<MR>(a, i, rows, 0, in, packed_x);
            for (std::size_t q = q0; q < q1; ++q) {
                const LinearTarget& t = *panels[q].target;
                const std::size_t j0 = panels[q].j0, width = panels[q].width;
                float* y = t.y + i * t.out + j0;
                if (in == 0) zero_tile(y, t.out, rows, width);  // no input: the sums are zero
                for (std::size_t p0 = 0; p0 < in; p0 += KC) {
                    const float* w_slice = w_panels[q] + p0 * NR;
                    const TileOperands tile = packed
                                                  ? TileOperands{packed_x + p0 * MR, 1, MR, w_slice}
                                                  : TileOperands{x + i * in + p0, in, 1, w_slice};
                    micro_kernel<MR, NR, R>(std::min(KC, in - p0), tile, y, t.out, rows, width,
                                            p0 > 0);
                }
                for (std::size_t r = 0; t.bias != nullptr && r < rows; ++r) {
                    float* row = y + r * t.out;
                    for (std::size_t o = 0; o < width; ++o) row[o] += t.bias[j0 + o];
                }
            }
        }
    }
}

// W (out, in) -> its NR-wide panels of outputs, each (in, NR) row-major, zero-padded: every
// slice [p0, p0 + kc) of a panel is the (kc, NR) block pack_w_panel makes, at p0 · NR.
template <std::size_t NR>
MHA_INLINE void pack_linear_t(const float* w, std::size_t out, std::size_t in, float* panels) {
    const LinearTarget target{w, nullptr, nullptr, out};
    for (std::size_t j0 = 0; j0 < out; j0 += NR) {
        pack_w_panel<NR>({&target, j0, std::min(NR, out - j0)}, in, 0, in, panels + j0 * in);
    }
}

// The reductions below keep `lanes` partial results, lane l taking elements l, l + lanes, ...
// in order, as one vector of lanes; exp_shifted's main loop takes two lanes' rows per turn, so
// its exponentials run across 2 · lanes floats (one AVX-512 register).
typedef float Lanes __attribute__((vector_size(lanes * sizeof(float))));

MHA_INLINE void add_lanes(Lanes& lane, const float* values) {
    Lanes v;
    std::memcpy(&v, values, sizeof v);
    lane += v;
}

MHA_INLINE float max_of_t(const float* values, std::size_t n) {
    Lanes lane;
    for (std::size_t l = 0; l < lanes; ++l) lane[l] = -std::numeric_limits<float>::infinity();
    std::size_t i = 0;
    for (; i + lanes <= n; i += lanes) {
        Lanes v;
        std::memcpy(&v, values + i, sizeof v);
        lane = lane < v ? v : lane;  // std::max(lane, v) in every lane
    }
    float max = lane[0];
    for (; i < n; ++i) max = std::max(max, values[i]);
    for (std::size_t l = 1; l < lanes; ++l) max = std::max(max, lane[l]);
    return max;
}

MHA_INLINE float exp_shifted_t(float* values, std::size_t n, float shift) {
    Lanes lane = {};
    std::size_t i = 0;
    for (; i + 2 * lanes <= n; i += 2 * lanes) {
        for (std::size_t l = 0; l < 2 * lanes; ++l)
            values[i + l] = exp_nonpositive_t(values[i + l] - shift);
        add_lanes(lane, values + i);
        add_lanes(lane, values + i + lanes);
    }
    for (; i + lanes <= n; i += lanes) {
        for (std::size_t l = 0; l < lanes; ++l)
            values[i + l] = exp_nonpositive_t(values[i + l] - shift);
        add_lanes(lane, values + i);
    }
    // the last partial vector into the first lanes, as a whole vector padded with blocked
    // keys' zeros would add it: a row's sum does not depend on how far past its keys it is
    // stored (a chunk's last query row and the same row of the whole sequence agree)
    for (std::size_t l = 0; i < n; ++i, ++l) {
        values[i] = exp_nonpositive_t(values[i] - shift);
        lane[l] += values[i];
    }
    float sum = lane[0];
    for (std::size_t l = 1; l < lanes; ++l) sum += lane[l];
    return sum;
}

// Steps 7-9 of one row: live entries scaled, those from `end` on blocked (scale_mask_tile's
// order for a row with no other mask), then softmax over the live ones by max_of and
// exp_shifted, the rest of the row's m entries zero.
// Returns the row's maximum: -inf when every key is blocked (the row is left to the caller).
MHA_INLINE float softmax_row_t(float* row, std::size_t live, std::size_t end, std::size_t m,
                               float factor) {
    for (std::size_t j = 0; j < live; ++j) row[j] *= factor;
    for (std::size_t j = end; j < live; ++j) row[j] = -std::numeric_limits<float>::infinity();
    const float max = max_of_t(row, live);
    if (max == -std::numeric_limits<float>::infinity()) return max;
    const float inverse = 1.0f / exp_shifted_t(row, live, max);
    for (std::size_t j = 0; j < live; ++j) row[j] *= inverse;
    std::fill(row + live, row + m, 0.0f);
    return max;
}

// ---- The fused attention tile (see kernels.h): Sᵀ = K Qᵀ, the online softmax down the
// keys with the queries in the lanes, Oᵀ = Oᵀ · shrink + Vᵀ P ----

template <std::size_t MR, std::size_t NR, Registers R>
MHA_INLINE void flash_scores_t(const float* keys, const float* queries, std::size_t d_k,
                               std::size_t kt, float factor, float* scores) {
    for (std::size_t i = 0; i < kt; i += MR) {
        const float* panel = keys + i * d_k;
        float* tile = scores + i * NR;  // keys [i, i + MR): (MR, NR)
        if (d_k <= KC) {        // one slice: the sums go from the registers to memory scaled
            float acc[MR][NR];  // add_products writes it whole
            add_products<MR, NR, R>(d_k, panel, queries, acc);
            for (std::size_t r = 0; r < MR; ++r) {
                for (std::size_t j = 0; j < NR; ++j) tile[r * NR + j] = acc[r][j] * factor;
            }
            continue;
        }
        for (std::size_t p0 = 0; p0 < d_k; p0 += KC) {
            micro_kernel<MR, NR, R>(std::min(KC, d_k - p0), panel + p0 * MR, queries + p0 * NR,
                                    tile, NR, MR, NR, p0 > 0);
        }
        for (std::size_t e = 0; e < MR * NR; ++e) tile[e] *= factor;
    }
}

template <std::size_t NR>
MHA_INLINE void flash_softmax_t(float* scores, std::size_t kt, float* row_max, float* row_sum,
                                float* shrink) {
    float top[NR], shift[NR], sum[NR] = {};
    for (std::size_t r = 0; r < NR; ++r) top[r] = -std::numeric_limits<float>::infinity();
    for (std::size_t j = 0; j < kt; ++j) {
        const float* row = scores + j * NR;
        for (std::size_t r = 0; r < NR; ++r) top[r] = top[r] < row[r] ? row[r] : top[r];
    }
    for (std::size_t r = 0; r < NR; ++r) {
        const float new_max = std::max(row_max[r], top[r]);
        // nothing visible yet: shift by 0, so e^(-inf - 0) = 0 for P and for the shrink
        shift[r] = new_max == -std::numeric_limits<float>::infinity() ? 0.0f : new_max;
        shrink[r] = exp_nonpositive_t(row_max[r] - shift[r]);
        row_max[r] = new_max;
    }
    for (std::size_t j = 0; j < kt; ++j) {
        float* row = scores + j * NR;
        for (std::size_t r = 0; r < NR; ++r) {
            row[r] = exp_nonpositive_t(row[r] - shift[r]);
            sum[r] += row[r];
        }
    }
    for (std::size_t r = 0; r < NR; ++r) row_sum[r] = row_sum[r] * shrink[r] + sum[r];
}

template <std::size_t MR, std::size_t NR, Registers R>
MHA_INLINE void flash_accumulate_t(const float* values, const float* p, std::size_t kt,
                                   std::size_t d_k, const float* shrink, float* o,
                                   std::size_t ldo) {
    for (std::size_t d = 0; d < d_k; ++d) {
        for (std::size_t r = 0; r < NR; ++r) o[d * ldo + r] *= shrink[r];
    }
    for (std::size_t d0 = 0; d0 < d_k; d0 += MR) {  // (MR, kt) x (kt, NR) -> rows d0.. of o
        micro_kernel<MR, NR, R>(kt, values + d0 * kt, p, o + d0 * ldo, ldo, std::min(MR, d_k - d0),
                                NR, true);
    }
}

// One variant: its name, register tile and entry points.
struct Variant {
    KernelVariant id;
    const char* name;
    const char* tile;
    std::size_t mr, nr;
    void (*gemm)(const MatrixView&, const MatrixView&, float*, std::size_t, bool, const GemmSkip&);
    void (*linear_panels)(const float*, std::size_t, const std::vector<LinearTarget>&, std::size_t,
                          std::size_t, std::size_t, std::size_t);
    void (*pack_linear)(const float*, std::size_t, std::size_t, float*);
    float (*max_of)(const float*, std::size_t);
    float (*exp_shifted)(float*, std::size_t, float);
    float (*softmax_row)(float*, std::size_t, std::size_t, std::size_t, float);
    FlashRegisterTile flash;
    void (*flash_scores)(const float*, const float*, std::size_t, std::size_t, float, float*);
    void (*flash_softmax)(float*, std::size_t, float*, float*, float*);
    void (*flash_accumulate)(const float*, const float*, std::size_t, std::size_t, const float*,
                             float*, std::size_t);
};

// The entry points of one variant, built for the CPU features `target` names.
#define MHA_VARIANT(suffix, target, MR, NR, NMR, NNR, FMR, FNR, R)                                 \
    target void gemm_##suffix(const MatrixView& a, const MatrixView& b, float* c, std::size_t ldc, \
                              bool accumulate, const GemmSkip& skip) {                             \
        gemm_t<MR, NR, NMR, NNR, R>(a, b, c, ldc, accumulate, skip);                               \
    }                                                                                              \
    target void linear_panels_##suffix(const float* x, std::size_t in,                             \
                                       const std::vector<LinearTarget>& targets, std::size_t r0,   \
                                       std::size_t r1, std::size_t p0, std::size_t p1) {           \
        linear_panels_t<MR, NR, R>(x, in, targets, r0, r1, p0, p1);                                \
    }                                                                                              \
    target void pack_linear_##suffix(const float* w, std::size_t out, std::size_t in,              \
                                     float* panels) {                                              \
        pack_linear_t<NR>(w, out, in, panels);                                                     \
    }                                                                                              \
    target float max_of_##suffix(const float* values, std::size_t n) {                             \
        return max_of_t(values, n);                                                                \
    }                                                                                              \
    target float exp_shifted_##suffix(float* values, std::size_t n, float shift) {                 \
        return exp_shifted_t(values, n, shift);                                                    \
    }                                                                                              \
    target float softmax_row_##suffix(float* row, std::size_t live, std::size_t end,               \
                                      std::size_t m, float factor) {                               \
        return softmax_row_t(row, live, end, m, factor);                                           \
    }                                                                                              \
    target void flash_scores_##suffix(const float* keys, const float* queries, std::size_t d_k,    \
                                      std::size_t kt, float factor, float* scores) {               \
        flash_scores_t<FMR, FNR, R>(keys, queries, d_k, kt, factor, scores);                       \
    }                                                                                              \
    target void flash_softmax_##suffix(float* scores, std::size_t kt, float* row_max,              \
                                       float* row_sum, float* shrink) {                            \
        flash_softmax_t<FNR>(scores, kt, row_max, row_sum, shrink);                                \
    }                                                                                              \
    target void flash_accumulate_##suffix(const float* values, const float* p, std::size_t kt,     \
                                          std::size_t d_k, const float* shrink, float* o,          \
                                          std::size_t ldo) {                                       \
        flash_accumulate_t<FMR, FNR, R>(values, p, kt, d_k, shrink, o, ldo);                       \
    }                                                                                              \
    static_assert(FMR <= widest_flash_mr && FNR <= widest_nr, "within widest_flash_tile");         \
    constexpr std::size_t mr_##suffix = MR, nr_##suffix = NR;                                      \
    constexpr FlashRegisterTile flash_tile_##suffix{FMR, FNR};                                     \
    constexpr const char* tile_##suffix = #MR "x" #NR " floats, narrow " #NMR "x" #NNR;

// Register tiles: the sums of MR x NR floats fill half to three quarters of the vector
// registers, leaving room for the products, b's row and a's broadcast (AVX-512's 6x64: 24
// of 32, no broadcast register; 4x64 ran 2-6% slower there once the broadcasts were folded
// into the multiplies, as its W panels stream from L2 for every 4 rows). AVX2's 6x16 holds
// 12 sums, b's two vectors, a broadcast and a product in its 16 registers: on AMD's Zen 3
// it ran at 91% of the peak in L1 and streams a third as much of b from L2 per multiply as
// the 3x32 it replaced (Q, K, V at (1, 512, 768, 12), one thread: 33 -> 25 ms). The narrow
// tile (NMR x NNR) has rows of one register each. The fused attention tile (FMR keys x FNR
// queries) needs FMR to divide its key tile and FNR its query tile
// (core/kernels/streaming.h), so AVX2 takes 4x16 there.
MHA_VARIANT(plain, , 4, 8, 8, 4, 4, 8, Registers::Sse2)
#if defined(__x86_64__) || defined(__i386__)
#define MHA_X86 1
// SSE2 is every x86-64 CPU's baseline, so there the plain build is already the SSE2 build: the
// sse2 row of the table takes it (a build of its own compiled the same code a second time).
#ifndef __x86_64__
MHA_VARIANT(sse2, __attribute__((target("sse2"))), 4, 8, 8, 4, 4, 8, Registers::Sse2)
#endif
MHA_VARIANT(avx2, __attribute__((target("avx2,fma"))), 6, 16, 12, 8, 4, 16, Registers::Avx2)
MHA_VARIANT(avx512, __attribute__((target("avx512f,avx512vl,avx512bw,fma"))), 6, 64, 16, 16, 4, 64,
            Registers::Avx512)
#endif

// A variant's row of the table, from what MHA_VARIANT built: its tiles are written once, there.
#define MHA_ENTRY(id, name, suffix)                                                               \
    {                                                                                             \
        id, name, tile_##suffix, mr_##suffix, nr_##suffix, gemm_##suffix, linear_panels_##suffix, \
            pack_linear_##suffix, max_of_##suffix, exp_shifted_##suffix, softmax_row_##suffix,    \
            flash_tile_##suffix, flash_scores_##suffix, flash_softmax_##suffix,                   \
            flash_accumulate_##suffix                                                             \
    }

const Variant variants[] = {
#ifdef MHA_X86
    MHA_ENTRY(KernelVariant::Avx512, "avx512", avx512),
    MHA_ENTRY(KernelVariant::Avx2, "avx2", avx2),
#ifdef __x86_64__
    MHA_ENTRY(KernelVariant::Sse2, "sse2", plain),
#else
    MHA_ENTRY(KernelVariant::Sse2, "sse2", sse2),
#endif
#endif
    MHA_ENTRY(KernelVariant::Plain, "plain", plain),
};

// Whether the CPU has the feature and the operating system saves its registers. glibc
// worked that out before main (<sys/platform/x86.h>, glibc 2.33 or later): asking it runs no
// cpuid instruction, where libgcc's __builtin_cpu_supports runs its own dozen or so at every
// start (each one traps on a virtual machine: about 6.5 µs here).
#if defined(MHA_X86) && defined(__has_include)
#if __has_include(<sys/platform/x86.h>)
#define _Bool bool  // glibc 2.36's inline functions there return C's _Bool, unknown to clang++
#include <sys/platform/x86.h>
#undef _Bool
#define MHA_CPU_HAS(glibc_name, gcc_name) CPU_FEATURE_ACTIVE(glibc_name)
#endif
#endif
#if defined(MHA_X86) && !defined(MHA_CPU_HAS)
#define MHA_CPU_HAS(glibc_name, gcc_name) __builtin_cpu_supports(gcc_name)
#endif

bool cpu_runs(KernelVariant v) {
#ifdef MHA_X86
    switch (v) {
        case KernelVariant::Avx512:
            return MHA_CPU_HAS(AVX512F, "avx512f") && MHA_CPU_HAS(AVX512VL, "avx512vl") &&
                   MHA_CPU_HAS(AVX512BW, "avx512bw") && MHA_CPU_HAS(FMA, "fma");
        case KernelVariant::Avx2:
            return MHA_CPU_HAS(AVX2, "avx2") && MHA_CPU_HAS(FMA, "fma");
        case KernelVariant::Sse2:
            return MHA_CPU_HAS(SSE2, "sse2");
        case KernelVariant::Plain:
            return true;
    }
    return false;
#else
    return v == KernelVariant::Plain;
#endif
}

const Variant& variant_of(KernelVariant id) {
    for (const Variant& v : variants) {
        if (v.id == id) return v;
    }
    return variants[sizeof variants / sizeof variants[0] - 1];
}

// The fastest variant this CPU runs, or the one MHA_KERNEL names.
const Variant* choose() {
    const char* forced = std::getenv("MHA_KERNEL");
    if (forced == nullptr || *forced == '\0') {
        for (const Variant& v : variants) {
            if (cpu_runs(v.id)) return &v;
        }
    }
    std::string known, runnable;
    for (const Variant& v : variants) {
        if (std::string(forced) == v.name) {
            if (cpu_runs(v.id)) return &v;
            for (const Variant& r : variants) {
                if (cpu_runs(r.id)) runnable += std::string(runnable.empty() ? "" : ", ") + r.name;
            }
            throw Error("MHA_KERNEL=" + std::string(forced) + ": this CPU cannot run it; it runs " +
                        runnable);
        }
        known += std::string(known.empty() ? "" : ", ") + v.name;
    }
    throw Error("MHA_KERNEL=" + std::string(forced) + ": not a kernel variant (" + known + ")");
}

const Variant* active = nullptr;

const Variant& current() {
    static const Variant* chosen = choose();
    return active != nullptr ? *active : *chosen;
}

bool all_blocked(float max) { return max == -std::numeric_limits<float>::infinity(); }

}  // namespace

std::vector<KernelVariant> runnable_kernel_variants() {
    std::vector<KernelVariant> list;
    for (const Variant& v : variants) {
        if (cpu_runs(v.id)) list.push_back(v.id);
    }
    return list;
}

void use_kernel_variant(KernelVariant v) {
    if (!cpu_runs(v))
        throw Error(std::string("this CPU cannot run the ") + variant_of(v).name + " kernels");
    active = &variant_of(v);
}

KernelVariant kernel_variant() { return current().id; }

const char* kernel_variant_name(KernelVariant v) { return variant_of(v).name; }

const char* kernel_variant_name() { return current().name; }

const char* kernel_tile_name() { return current().tile; }

void check_kernel_choice() { current(); }

float exp_nonpositive(float x) { return exp_nonpositive_t(x); }

std::size_t gemm_scratch_floats(std::size_t k, std::size_t m) {
    return std::min(k, KC) * (round_up(m, widest_nr) + mc_rows);
}

void gemm(const MatrixView& a, const MatrixView& b, float* c, std::size_t ldc, bool accumulate,
          const GemmSkip& skip) {
    current().gemm(a, b, c, ldc, accumulate, skip);
}

void gemm_naive(const MatrixView& a, const MatrixView& b, float* c, std::size_t ldc,
                bool accumulate) {
    for (std::size_t i = 0; i < a.rows; ++i) {
        for (std::size_t j = 0; j < b.cols; ++j) {
            float total = accumulate ? c[i * ldc + j] : 0.0f;
            for (std::size_t p0 = 0; p0 < a.cols; p0 += KC) {  // a slice's sum from +0, then added
                float sum = 0.0f;
                for (std::size_t p = p0; p < std::min(a.cols, p0 + KC); ++p)
                    sum = std::fma(a(i, p), b(p, j), sum);
                total = p0 == 0 && !accumulate ? sum : total + sum;
            }
            c[i * ldc + j] = total;
        }
    }
}

GemmSkip causal_skip(const HeadMask& mask, GemmSkip::Kind kind) {
    if (mask.n == 0 || mask.key_end(mask.n - 1) == mask.m || mask.key_end(0) == 0) return {};
    return {kind, std::ptrdiff_t(mask.key_end(0)) - 1};
}

std::size_t linear_panel_count(const std::vector<LinearTarget>& targets) {
    std::size_t panels = 0;
    for (const LinearTarget& t : targets) panels += round_up(t.out, current().nr) / current().nr;
    return panels;
}

std::size_t linear_group_panels(std::size_t in, std::size_t rows) {
    return group_panels(in, rows, current().mr, current().nr);
}

void linear_panels(const float* x, std::size_t in, const std::vector<LinearTarget>& targets,
                   std::size_t row_begin, std::size_t row_end, std::size_t panel_begin,
                   std::size_t panel_end) {
    current().linear_panels(x, in, targets, row_begin, row_end, panel_begin, panel_end);
}

void linear_naive(const float* x, std::size_t rows, std::size_t in, const LinearTarget& t) {
    const MatrixView w_rows{t.w, t.out, in, in, 1};
    gemm_naive({x, rows, in, in, 1}, w_rows.transposed(), t.y, t.out, false);
    for (std::size_t r = 0; t.bias != nullptr && r < rows; ++r) {
        for (std::size_t o = 0; o < t.out; ++o) t.y[r * t.out + o] += t.bias[o];
    }
}

PackedLinear pack_linear(const float* w, std::size_t out, std::size_t in) {
    const Variant& v = current();
    PackedLinear packed;
    packed.variant = v.id;
    packed.panels.resize(round_up(out, v.nr) * in);
    v.pack_linear(w, out, in, packed.panels.data());
    return packed;
}

std::size_t packed_linear_floats(std::size_t out, std::size_t in) {
    return round_up(out, widest_nr) * in;
}

const float* PackedLinear::for_kernels() const {
    return variant == kernel_variant() && !panels.empty() ? panels.data() : nullptr;
}

std::size_t linear_scratch_floats(std::size_t in, std::size_t out, std::size_t targets) {
    const std::size_t panels = std::min(in * (out + targets * widest_nr),  // W, a group at most
                                        max_group_floats + in * widest_nr);
    return panels + in * mc_rows;  // and one tile of x, all `in` deep
}

void scale_mask_tile(float* tile, std::size_t ld, std::size_t row0, std::size_t rows,
                     std::size_t col0, std::size_t cols, float factor, const HeadMask& mask) {
    const float blocked = -std::numeric_limits<float>::infinity();
    const double cap = mask.masks->softcap;
    const Window window{mask.masks->window, mask.masks->sinks};
    for (std::size_t r = 0; r < rows; ++r) {
        float* row = tile + r * ld;
        for (std::size_t j = 0; j < cols; ++j) row[j] *= factor;
        if (cap > 0.0) softcap(row, cols, cap);
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
        if (window.size > 0) apply_window(block, window);
    }
}

float max_of(const float* values, std::size_t n) { return current().max_of(values, n); }

float max_of_naive(const float* values, std::size_t n) {
    float max = -std::numeric_limits<float>::infinity();
    for (std::size_t i = 0; i < n; ++i) max = std::max(max, values[i]);
    return max;
}

FlashRegisterTile flash_tile() { return current().flash; }

FlashRegisterTile widest_flash_tile() { return {widest_flash_mr, widest_nr}; }

void flash_scores(const float* keys, const float* queries, std::size_t d_k, std::size_t kt,
                  float factor, float* scores) {
    current().flash_scores(keys, queries, d_k, kt, factor, scores);
}

void flash_scores_naive(const float* keys, const float* queries, std::size_t d_k, std::size_t kt,
                        float factor, float* scores) {
    const std::size_t mr = flash_tile().mr, nr = flash_tile().nr;
    for (std::size_t j = 0; j < kt; ++j) {
        const float* key = keys + j / mr * d_k * mr + j % mr;  // feature d at key[d · mr]
        for (std::size_t r = 0; r < nr; ++r) {
            float total = 0.0f;
            for (std::size_t p0 = 0; p0 < d_k; p0 += KC) {  // a slice's sum from +0, then added
                float sum = 0.0f;
                for (std::size_t d = p0; d < std::min(d_k, p0 + KC); ++d)
                    sum = std::fma(key[d * mr], queries[d * nr + r], sum);
                total = p0 == 0 ? sum : total + sum;
            }
            scores[j * nr + r] = total * factor;
        }
    }
}

void flash_softmax(float* scores, std::size_t kt, float* row_max, float* row_sum, float* shrink) {
    current().flash_softmax(scores, kt, row_max, row_sum, shrink);
}

void flash_accumulate(const float* values, const float* p, std::size_t kt, std::size_t d_k,
                      const float* shrink, float* o, std::size_t ldo) {
    current().flash_accumulate(values, p, kt, d_k, shrink, o, ldo);
}

void flash_accumulate_naive(const float* values, const float* p, std::size_t kt, std::size_t d_k,
                            const float* shrink, float* o, std::size_t ldo) {
    const std::size_t mr = flash_tile().mr, nr = flash_tile().nr;
    for (std::size_t d = 0; d < d_k; ++d) {
        const float* feature = values + d / mr * kt * mr + d % mr;  // key j's at feature[j · mr]
        for (std::size_t r = 0; r < nr; ++r) {
            float sum = 0.0f;
            for (std::size_t j = 0; j < kt; ++j) sum = std::fma(feature[j * mr], p[j * nr + r], sum);
            o[d * ldo + r] = o[d * ldo + r] * shrink[r] + sum;
        }
    }
}

float exp_shifted(float* values, std::size_t n, float shift) {
    return current().exp_shifted(values, n, shift);
}

float exp_shifted_naive(float* values, std::size_t n, float shift) {
    float lane[lanes] = {};  // lane l sums elements l, l + lanes, l + 2·lanes, ...
    for (std::size_t i = 0; i < n; ++i) values[i] = exp_nonpositive(values[i] - shift);
    for (std::size_t i = 0; i < n; ++i) lane[i % lanes] += values[i];
    float sum = lane[0];
    for (std::size_t l = 1; l < lanes; ++l) sum += lane[l];
    return sum;
}

std::size_t scale_mask_softmax(float* scores, float factor, const HeadMask& mask,
                               bool zero_masked_rows) {
    if (mask.m == 0) return 0;  // no key at all: empty rows, none of them blocked
    // a row with no mask tensor, ALiBi, window or soft-cap is scaled and blocked by
    // softmax_row itself; any other has its masks applied first, then takes the same call
    // with nothing left to scale or block (x · 1 is x)
    const bool plain = mask.attn == nullptr && mask.padding == nullptr && mask.alibi_slope == 0.0 &&
                       mask.masks->window == 0 && !(mask.masks->softcap > 0.0);
    const Variant& kernels = current();
    std::size_t masked = 0;
    for (std::size_t r = 0; r < mask.n; ++r) {
        // Keys from key_end on are blocked: their weights are 0. The row is worked up to a
        // whole number of the reductions' lanes past it, so every sum adds what it added over
        // the whole row (the blocked keys' -inf and 0 change no maximum and no sum).
        float* row = scores + r * mask.m;
        const std::size_t end = mask.key_end(r), live = std::min(mask.m, round_up(end, lanes));
        if (!plain) scale_mask_tile(row, mask.m, r, 1, 0, live, factor, mask);
        const float max = plain ? kernels.softmax_row(row, live, end, mask.m, factor)
                                : kernels.softmax_row(row, live, live, mask.m, 1.0f);
        if (all_blocked(max)) {
            const float fill = zero_masked_rows ? 0.0f : std::numeric_limits<float>::quiet_NaN();
            std::fill(row, row + mask.m, fill);
            ++masked;
        }
    }
    return masked;
}

std::size_t scale_mask_softmax_naive(float* scores, float factor, const HeadMask& mask,
                                     bool zero_masked_rows) {
    if (mask.m == 0) return 0;
    std::size_t masked = 0;
    for (std::size_t r = 0; r < mask.n; ++r) {
        float* row = scores + r * mask.m;
        const std::size_t live = std::min(mask.m, round_up(mask.key_end(r), lanes));  // as tuned
        scale_mask_tile(row, mask.m, r, 1, 0, live, factor, mask);
        const float max = max_of_naive(row, live);
        if (all_blocked(max)) {
            const float fill = zero_masked_rows ? 0.0f : std::numeric_limits<float>::quiet_NaN();
            std::fill(row, row + mask.m, fill);
            ++masked;
            continue;
        }
        const float inverse = 1.0f / exp_shifted_naive(row, live, max);
        for (std::size_t j = 0; j < live; ++j) row[j] *= inverse;
        std::fill(row + live, row + mask.m, 0.0f);
    }
    return masked;
}

}  // namespace mha
