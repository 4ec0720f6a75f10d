#pragma once
// The backward of attend_streaming for one (batch, head) unit, FlashAttention-2 style: from the
// forward's context O and row log-sum-exp alone, the weights P are recomputed tile by tile and
// dQ, dK, dV accumulated without any (N, M) tensor being stored.

#include <cstddef>
#include <cstdint>

#include "core/kernels/kernels.h"

namespace mha {

// Where one unit's gradients go, each row-major with its rows `ld` apart.
struct UnitGradients {
    float* dq;  // (N, d_k)
    std::size_t ldq;
    float* dk;  // (M, d_k)
    std::size_t ldk;
    float* dv;  // (M, d_v)
    std::size_t ldv;
};

// What the forward of one unit left for its backward.
struct UnitForward {
    MatrixView context;  // (N, d_v) O, as attend_streaming wrote it
    const float* lse;    // (N) its row log-sum-exp (attend_streaming's lse)
};

// The gradients of L = Σ O ∘ d_o for one unit whose forward was
// O = softmax(s) v, s = cap(q kᵀ · factor) + mask (the scores attend_streaming forms):
//   D = rowsum(d_o ∘ O), by row_d                              (N)
//   for each tile of keys, for each tile of queries it can see:
//     P = e^(s − lse);  dV += Pᵀ d_o;  dP = d_o vᵀ;  dS = P ∘ (dP − D) · cap' · factor
//     dQ += dS k;  dK += dSᵀ q
// q (N, d_k), k (M, d_k), v (M, d_v), d_o (N, d_v) as strided views. Tiles wholly outside the
// causal or window band are skipped. A query with every key blocked (lse = −inf) gives NaN in
// its dQ row and in every dK and dV entry, as the standard path's NaN weights do (PyTorch), or
// adds nothing (a zero dQ row) when zero_masked_rows. Returns how many such rows there were.
// Every gradient is summed in an order fixed by the sizes and the mask alone (key tiles, then
// query tiles, ascending; gemm within a tile), so thread counts and kernel variants change no
// bit.
std::size_t attend_backward_streaming(const MatrixView& q, const MatrixView& k, const MatrixView& v,
                                      const HeadMask& mask, float factor, bool zero_masked_rows,
                                      const UnitForward& forward, const MatrixView& d_o,
                                      const UnitGradients& grads);

// D of row i, rowsum(d_o ∘ O) over the row's d_v features (d_o, context (N, d_v)), summed as
// gemm sums one element of dP = d_o vᵀ (gemm_naive does it: each product fused into its slice's
// sum, slices of 256 from +0, in order). Where a row's weights are one-hot, O is that key's row
// of v, and D then has the very bits of its dP: dP − D is 0, as in exact arithmetic. A sum
// rounded otherwise leaves the two roundings' difference, which the nearly one-hot rows of
// PyTorch's saturated case carried into every gradient (1.7e-4 off its float64 gradients,
// against 9e-8 on the standard path).
float row_d(const MatrixView& d_o, const MatrixView& context, std::size_t i);

// One tile of queries [q0, q0 + rows) by keys [k0, k0 + cols), cols <= stream_key_tile, rows
// ld apart: s holds the raw products q kᵀ and dp the products d_o vᵀ; lse and d (rows) are
// the tile's rows' log-sum-exp and D. s becomes P = e^(score − lse) (scale, soft-cap and mask
// as scale_mask_tile applies them; 0 where blocked) and dp becomes dS = P ∘ (dP − D) · cap' ·
// factor (cap' from softcap_slopes, 1 without a soft-cap). Rows whose lse is −inf get P = 0
// and dS = 0.
void softmax_backward_tile(float* s, float* dp, std::size_t ld, std::size_t q0, std::size_t rows,
                           std::size_t k0, std::size_t cols, float factor, const HeadMask& mask,
                           const float* lse, const float* d);

// Floats one thread holds while running attend_backward_streaming on N queries (d_k wide,
// values d_v): D, the tile's P and dP, and gemm's packing for the tile's products. It does
// not grow with M. An Error if that exceeds 64 bits.
std::uint64_t streaming_backward_scratch_floats(std::size_t n, std::size_t d_k, std::size_t d_v);

}  // namespace mha
