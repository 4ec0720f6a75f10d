#pragma once
// Fast kernels: a cache-blocked, register-tiled matrix product (the right operand on packed
// panels, the left read in place where it streams well), an exp that compilers vectorise,
// and scale-mask-softmax fused over one head. Portable C++ (no intrinsics; the tiles and the
// reductions use the GNU vector extension, which g++ and clang++ both take) built for several
// CPUs and chosen at start-up. Every product is fused into its sum (one rounding: an FMA
// instruction on AVX2 and AVX-512, std::fma on SSE2 and plain). Each keeps a plain twin beside
// it (`_naive`, as llm.c keeps matmul_forward_naive): short loops summing in the same order
// with std::fma, the same bits.

#include <cstddef>
#include <vector>

#include "core/ops/masks.h"
#include "core/ops/ops.h"
#include "core/tensor/tensor.h"

namespace mha {

// What a product may leave out under a causal mask, given as a diagonal shift s:
//   RowEnds     a(i, p) = 0 for p > i + s   (P, dS: no weight past a query's last key)
//   RowStarts   a(i, p) = 0 for p < i - s   (Pᵀ, dSᵀ: no weight before a key's first query)
//   OutputEnds  c(i, j) is not wanted for j > i + s (blocked keys' scores): some such
//               elements are left unwritten
// b must be finite: a left-out product of a zero adds nothing, so the bits are the same.
struct GemmSkip {
    enum Kind { None, RowEnds, RowStarts, OutputEnds } kind = None;
    std::ptrdiff_t shift = 0;
};

// c = a b, or c += a b when accumulate: (n, k) x (k, m) -> (n, m), any strides for
// a and b, c row-major with rows ldc apart. Every element of c is summed in the same
// order whatever its position, so splitting rows over threads changes no bit.
void gemm(const MatrixView& a, const MatrixView& b, float* c, std::size_t ldc,
          bool accumulate = false, const GemmSkip& skip = {});
// Its plain twin: each element summed as gemm sums it (slices of 256, each from +0, in order,
// each product fused into the sum: std::fma).
void gemm_naive(const MatrixView& a, const MatrixView& b, float* c, std::size_t ldc,
                bool accumulate);

// The skip of `kind` for a product over one unit's (N, M) weights under its causal rule or
// window: query i sees no key past key_end(i) = i + s + 1. None without either, or when a
// query sees no key at all (its row of weights is NaN, not zero).
GemmSkip causal_skip(const HeadMask& mask, GemmSkip::Kind kind);

// The builds of the kernels, fastest first. Every variant gives the same bits. avx512 and avx2
// need the CPU's FMA too (every CPU with AVX-512, and nearly every one with AVX2, has it).
enum class KernelVariant { Avx512, Avx2, Sse2, Plain };

// The variants this CPU can run, fastest first (Plain always).
std::vector<KernelVariant> runnable_kernel_variants();

// The variant in use: the fastest the CPU runs, or the one the environment
// variable MHA_KERNEL names (avx512, avx2, sse2, plain; an Error if this CPU
// cannot run it), unless use_kernel_variant chose another.
KernelVariant kernel_variant();
const char* kernel_variant_name();
const char* kernel_variant_name(KernelVariant v);

// Runs every later kernel call on v (Error if this CPU cannot). Call it only while
// no kernel runs (tests, start-up).
void use_kernel_variant(KernelVariant v);

// Throws the Error for a bad MHA_KERNEL now rather than at the first kernel call.
void check_kernel_choice();

// The register tiles of the variant in use, e.g. "6x64 floats, narrow 16x16".
const char* kernel_tile_name();

// Floats of packing space one thread's gemm keeps for a (k) x (m) right-hand side.
std::size_t gemm_scratch_floats(std::size_t k, std::size_t m);

// One product of a projection: y (rows, out) = x (rows, in) Wᵀ + b, W (out, in) and y
// row-major, bias (out) or null. Several targets of one x make one fused product (the
// Q, K and V projections of self-attention) whose outputs stay separate tensors.
struct LinearTarget {
    const float* w;     // (out, in)
    const float* bias;  // (out) or null
    float* y;           // (rows, out)
    std::size_t out;
    const float* packed = nullptr;  // W's panels as pack_linear left them for the kernels in
                                    // use (PackedLinear::for_kernels), or null: packed per call
};

// A weight W (out, in) packed once for the kernels of one variant: each register tile's width
// of outputs, all `in` deep, zero-padded, as linear_panels packs them slice by slice. Shared
// read-only by every thread and every call given it, so a repeated projection (a bench's
// repeated pass, decoding token by token) packs its weight no more.
struct PackedLinear {
    KernelVariant variant = KernelVariant::Plain;
    std::vector<float> panels;  // (out rounded up to the tile width, in) in panels

    // The panels for LinearTarget::packed: null when the kernels in use changed since.
    const float* for_kernels() const;
};

// W (out, in) row-major packed for the kernels in use: round_up(out, tile width) · in floats.
PackedLinear pack_linear(const float* w, std::size_t out, std::size_t in);

// The most floats pack_linear takes for W (out, in), on any variant.
std::size_t packed_linear_floats(std::size_t out, std::size_t in);

// The column panels of the targets for the kernels in use (a register tile's width of
// outputs each; a target's last panel may be narrower): the units linear_panels splits.
std::size_t linear_panel_count(const std::vector<LinearTarget>& targets);

// The panels linear_panels runs together, one group after another, for `rows` rows of `in`
// inputs (the group's W stays in L2 while every row tile of x meets it): a call on whole
// groups reads x and W as one call on all the panels does.
std::size_t linear_group_panels(std::size_t in, std::size_t rows);

// Rows [row_begin, row_end) of panels [panel_begin, panel_end) of every target's
// y = x Wᵀ + b, x (rows, in) row-major. W's panels are read from `packed` when a target has
// them, else packed once per call and shared by every row of the call. Each element is
// summed as gemm sums it, then the bias added, so every split of rows and panels, packed
// before or not, gives the same bits.
void linear_panels(const float* x, std::size_t in, const std::vector<LinearTarget>& targets,
                   std::size_t row_begin, std::size_t row_end, std::size_t panel_begin,
                   std::size_t panel_end);
// Its plain twin on one target: y (rows, t.out) = x (rows, in) Wᵀ by gemm_naive, then + b.
void linear_naive(const float* x, std::size_t rows, std::size_t in, const LinearTarget& t);

// Floats of packing space one thread's linear_panels keeps for `in` inputs and `out`
// outputs in all (the sum of the outputs of `targets` targets).
std::size_t linear_scratch_floats(std::size_t in, std::size_t out, std::size_t targets);

// Steps 7-8 on a tile of one head's scores: rows [row0, row0 + rows) and keys
// [col0, col0 + cols), stored row-major with rows ld apart. Multiplies by factor,
// soft-caps, adds the masks and the ALiBi bias, sets blocked keys (causal, outside the
// window) to -inf: the same float operations in the same order as scale, softcap,
// add_mask, add_key_padding, add_alibi, apply_causal and apply_window.
void scale_mask_tile(float* tile, std::size_t ld, std::size_t row0, std::size_t rows,
                     std::size_t col0, std::size_t cols, float factor, const HeadMask& mask);

// Steps 7-9 fused on one head's (N, M) scores, row-major: weights in place.
// Returns the rows with every key blocked (NaN, or zeros when zero_masked_rows).
std::size_t scale_mask_softmax(float* scores, float factor, const HeadMask& mask,
                               bool zero_masked_rows);
// Its plain twin: scale_mask_tile, then max_of_naive and exp_shifted_naive on each row.
std::size_t scale_mask_softmax_naive(float* scores, float factor, const HeadMask& mask,
                                     bool zero_masked_rows);

// e^x for x <= 0, within 1e-7 relative; 0 below -87 and for -inf.
float exp_nonpositive(float x);

// The largest of n values (-inf for none).
float max_of(const float* values, std::size_t n);
float max_of_naive(const float* values, std::size_t n);  // its plain twin (NaN and ±0 aside)

// values[i] = e^(values[i] - shift) for each of n values; returns their sum, added in 8
// lanes (lane l takes elements l, l + 8, ...), then lanes 0 to 7: the same sum for a row
// stored with or without blocked keys' zeros after it. shift must be finite; e^(-inf) is 0.
float exp_shifted(float* values, std::size_t n, float shift);
// Its plain twin, summing in exp_shifted's order.
float exp_shifted_naive(float* values, std::size_t n, float shift);

// ---- The fused attention tile of the streaming path (core/kernels/streaming.cpp) ----
// A tile of scores is computed transposed, Sᵀ = K Qᵀ: its rows are keys and its columns
// queries, so the online softmax runs down the keys with one query per vector lane, and P
// is left exactly where the product Oᵀ += Vᵀ P reads it. Every score and every output sums
// in an order fixed by the sizes alone (never by the register tile), so all variants and
// all thread counts give the same bits.

// The register tile of the variant in use: mr keys (or features) by nr queries.
struct FlashRegisterTile {
    std::size_t mr, nr;
};
FlashRegisterTile flash_tile();
// At least the mr and the nr of every variant's tile (a constant, checked when each variant is
// built): what memory bounds count, so that a budget is the same on every CPU.
FlashRegisterTile widest_flash_tile();

// scores (kt, nr) = keys (kt, d_k) queriesᵀ · factor. keys: kt / mr panels of mr keys, each
// (d_k, mr) row-major; queries: one panel of nr queries, (d_k, nr) row-major; kt a multiple
// of mr. Each score sums its d_k products in order, in slices of 256 as gemm does, then is
// multiplied by factor: the bits gemm and scale_mask_tile give it.
void flash_scores(const float* keys, const float* queries, std::size_t d_k, std::size_t kt,
                  float factor, float* scores);
// Its plain twin: each score summed in slices of 256, then scaled.
void flash_scores_naive(const float* keys, const float* queries, std::size_t d_k, std::size_t kt,
                        float factor, float* scores);

// The online softmax on one tile of masked scores (kt, nr), in place. For each query r:
//   new = max(row_max[r], max of column r);  shrink[r] = e^(row_max[r] - new)
//   P = e^(S - new);  row_sum[r] = row_sum[r] · shrink[r] + Σ P (keys in order, one sum)
// A query that has seen only blocked keys (new = -inf) gets P = 0 and shrink 0.
// row_max, row_sum and shrink hold nr values each.
void flash_softmax(float* scores, std::size_t kt, float* row_max, float* row_sum, float* shrink);

// o (d_k, nr), rows ldo apart: o = o · shrink + valuesᵀ p, where p (kt, nr) and values are
// the tile's kt keys in panels of mr features, panel f (kt, mr) row-major at f · kt · mr
// (zero-padded past d_k). Each output adds the tile's kt products, in order, as one sum.
void flash_accumulate(const float* values, const float* p, std::size_t kt, std::size_t d_k,
                      const float* shrink, float* o, std::size_t ldo);
// Its plain twin: each output shrunk, then its kt products added as one sum.
void flash_accumulate_naive(const float* values, const float* p, std::size_t kt, std::size_t d_k,
                            const float* shrink, float* o, std::size_t ldo);

}  // namespace mha
