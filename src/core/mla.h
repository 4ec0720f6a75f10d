#pragma once
// Multi-head latent attention (DeepSeek-V2): keys and values come from one small latent per
// token, so the KV cache holds d_c + d_R numbers per token; computed naively (the latent
// up-projected into keys and values) or absorbed (the up-projections folded into the query
// and the output), which give the same result.

#include <cstddef>
#include <cstdint>

#include "core/rope.h"
#include "core/tensor.h"

namespace mha {

struct MlaSizes {
    std::size_t d_model;
    std::size_t heads;   // h
    std::size_t d_nope;  // d_h: the part of each head's q and k without position
    std::size_t d_rope;  // d_R: the decoupled RoPE part, one key shared by all heads
    std::size_t d_latent;  // d_c: the compressed KV latent
    std::size_t d_v;     // each head's value width
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

enum class MlaForm { Naive, Absorbed };

struct MlaResult {
    Tensor queries;   // (B, N, h·(d_h + d_R))  q_proj's output, before RoPE
    Tensor kv_a;      // (B, N, d_c + d_R)      kv_a_proj_with_mqa's output, before norm and RoPE
    Tensor output;    // (B, N, d_model)
    Tensor weights;   // (B, h, N, N)  attention weights per head
    Tensor latent;    // (B, N, d_c)   what the cache keeps per token, after the RMSNorm
    Tensor rope_key;  // (B, N, d_R)   the shared RoPE key, also cached
};

// Self-attention over x (B, N, d_model), positions 0..N−1, scores / sqrt(d_h + d_R).
MlaResult mla_forward(const MlaWeights& weights, const Tensor& x, std::size_t heads, bool causal,
                      const Rope& rope, MlaForm form);

// Numbers one layer caches per token (DeepSeek-V2, Table 1): MHA 2·h·d_h, GQA 2·G·d_h,
// MQA 2·d_h, MLA d_c + d_R.
struct CachePerToken {
    std::uint64_t mha, gqa, mqa, mla;
};
CachePerToken cache_per_token(const MlaSizes& sizes, std::size_t kv_heads);

// The GQA row of the ledger: 8 K/V heads as Llama 2 70B and DeepSeek-V2's Table 1 have them,
// or, for fewer heads, the largest divisor of h below h other than 1; 0 when h has none.
std::size_t ledger_kv_heads(std::size_t heads);

// The MLA sizes seeded weights get: d_h = d_v = d_model / h, d_c and d_R as given.
MlaSizes seeded_mla_sizes(std::size_t d_model, std::size_t heads, std::size_t d_latent,
                          std::size_t d_rope);

// Parameters of the five MLA matrices and the latent's norm.
std::uint64_t mla_parameter_count(const MlaSizes& sizes);

// Bytes the MLA form allocates for B sequences of N tokens: both forms' results and the
// largest per-head temporaries (throws mha::Error past 64 bits).
std::uint64_t mla_bytes(const MlaSizes& sizes, std::size_t batch, std::size_t seq_len);

}  // namespace mha
