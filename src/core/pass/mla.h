#pragma once
// Multi-head latent attention (DeepSeek-V2): keys and values come from one small latent per
// token, so the KV cache holds d_c + d_R numbers per token. Its sizes, weights, cache ledger
// and the copy between its projections' rows and its heads; core/forms/mla_pass.h computes it
// through the shared pass.

#include <cstddef>
#include <cstdint>

#include "core/pass/step.h"
#include "core/sizes.h"
#include "core/tensor/tensor.h"

namespace mha {

struct MlaSizes {
    std::size_t d_model;
    std::size_t heads;     // h
    std::size_t d_nope;    // d_h: the part of each head's q and k without position
    std::size_t d_rope;    // d_R: the decoupled RoPE part, one key shared by all heads
    std::size_t d_latent;  // d_c: the compressed KV latent
    std::size_t d_v;       // each head's value width
};

// The Hugging Face DeepSeek-V2 layout (without the query's low-rank compression).
struct MlaWeights {
    Tensor w_q;      // (h·(d_h + d_R), d_model)  q_proj: per head [q_nope (d_h), q_pe (d_R)]
    Tensor w_kv_a;   // (d_c + d_R, d_model)      kv_a_proj_with_mqa: [latent (d_c), k_pe (d_R)]
    Tensor kv_norm;  // (d_c)                     kv_a_layernorm: RMSNorm of the latent
    Tensor w_kv_b;   // (h·(d_h + d_v), d_c)      kv_b_proj: per head [W_UK (d_h), W_UV (d_v)] rows
    Tensor w_o;      // (d_model, h·d_v)          o_proj
};

// The sizes the weights imply for h heads; throws mha::Error when they do not fit together.
MlaSizes mla_sizes(const MlaWeights& weights, std::size_t heads);

// The sizes of the shared pass (steps 6-14) for B sequences of N tokens, in each form:
// naive, h heads of q and k d_h + d_R wide and values d_v wide; absorbed, one shared key
// head [c_kv, k_pe] (d_c + d_R) and value head c_kv (d_c), multi-query attention.
Sizes mla_naive_sizes(const MlaSizes& sizes, std::size_t batch, std::size_t seq_len);
Sizes mla_absorbed_sizes(const MlaSizes& sizes, std::size_t batch, std::size_t seq_len);

// Numbers one layer caches per token (DeepSeek-V2, Table 1): MHA 2·h·d_h, GQA 2·G·d_h,
// MQA 2·d_h, MLA d_c + d_R.
struct CachePerToken {
    std::uint64_t mha, gqa, mqa, mla;
};
CachePerToken cache_per_token(const MlaSizes& sizes, std::size_t kv_heads);

// The GQA row of the ledger: 8 K/V heads as Llama 2 70B and DeepSeek-V2's Table 1 have them,
// or, for fewer heads, the largest divisor of h below h other than 1; 0 when h has none.
std::size_t ledger_kv_heads(std::size_t heads);

// The facts of MLA's steps over N tokens: its sizes, and the ledger of what each kind caches
// (a step of the absorbed form when `absorbed`).
MlaFacts mla_facts(const MlaSizes& sizes, std::size_t seq_len, bool absorbed);

// The MLA sizes seeded weights get: d_h = d_v = d_model / h, d_c and d_R as given.
MlaSizes seeded_mla_sizes(std::size_t d_model, std::size_t heads, std::size_t d_latent,
                          std::size_t d_rope);

// Parameters of the five MLA matrices and the latent's norm.
std::uint64_t mla_parameter_count(const MlaSizes& sizes);

// Which way copy_heads copies: from the rows into the heads, as the forward splits what a
// projection wrote into heads, or back, as the backward puts the heads' gradients side by side.
enum class HeadsCopy { IntoHeads, IntoRows };

// For heads (B, h, N, ·) and rows (B, N, ·): heads[b, i, n, at : at + width] and
// rows[b, n, first + i·step : ... + width], copied from `from` into `to` (the heads are `to`
// IntoHeads, `from` IntoRows). Step 0 (IntoHeads) gives every head the same features.
void copy_heads(HeadsCopy way, const Tensor& from, Tensor& to, std::size_t at, std::size_t first,
                std::size_t step, std::size_t width);

}  // namespace mha
