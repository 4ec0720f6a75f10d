#pragma once
// MLA's parts of x, shared by the one-shot form (mla_pass.h) and decoding with a latent cache
// (mla_decode.h): the queries, the normed latent and the rotated RoPE key of some rows, and
// the naive form's heads put together from them.

#include <cstddef>

#include "core/pass/attention.h"
#include "core/pass/mla.h"

namespace mha {

// What x's projections give both forms.
struct MlaParts {
    Tensor queries;   // (B, L, h·(d_h + d_R))  q_proj's output, per head [q_nope, q_pe]
    Tensor kv_a;      // (B, L, d_c + d_R)      kv_a_proj_with_mqa's output: [c_kv, k_pe]
    Tensor latent;    // (B, L, d_c)            c_kv after the RMSNorm: what the cache keeps
    Tensor rope_key;  // (B, L, d_R)            k_pe, rotated: cached too
    Tensor q_pe;      // (B, h, L, d_R)         each head's q_pe, rotated
};

// 1-2: the parts of the L rows x (B, L, d_model), row l at position first_position + l (RoPE
// turns it by that position). `latent_raw`, when given, receives c_kv before its RMSNorm
// (B, L, d_c). Throws mha::Error when a projection passes float32's range.
MlaParts project_parts(const MlaWeights& weights, const Tensor& x, const MlaSizes& sizes,
                       const ForwardOptions& options, std::size_t first_position,
                       Tensor* latent_raw = nullptr);

// 3's check: a projection y (B, L, width) of rows from first_position on that passed
// float32's range is an Error naming its first such row.
void check_finite(const Tensor& y, const char* name, std::size_t first_position = 0);

// heads[..., at : at + d] = part for heads (B, h, L, ·) and part (B, h, L, d).
void put_part(Tensor& heads, std::size_t at, const Tensor& part);

// The naive form's query heads [q_nope, q_pe] (B, h, L, d_h + d_R) from the parts' queries
// and rotated q_pe.
Tensor query_heads(const MlaParts& parts, const MlaSizes& sizes, Workspace* workspace);

// The naive form's K [k_nope, k_pe] (B, h, M, d_h + d_R), k_pe shared by every head, and V
// (B, h, M, d_v), from kv = c_kv kv_b_projᵀ (B, M, h·(d_h + d_v)) and the rotated RoPE key
// (B, M, d_R).
struct KeyValueHeads {
    Tensor k;  // (B, h, M, d_h + d_R)
    Tensor v;  // (B, h, M, d_v)
};
KeyValueHeads key_value_heads(const Tensor& kv, const Tensor& rope_key, const MlaSizes& sizes,
                              Workspace* workspace);

// The options of the shared steps 6-14: RoPE is done (on the d_R parts only), and no packed
// weights belong to MLA's W_o.
ForwardOptions shared_options(const ForwardOptions& options);

}  // namespace mha
