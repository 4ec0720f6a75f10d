#pragma once
// MLA decoding with a latent KV cache (--form mla --decode T): T tokens, one query at a time,
// caching per token only what DeepSeek-V2 caches, the latent c_kv (d_c, after its RMSNorm)
// and the shared RoPE key k_pe (d_R, rotated to its position): d_c + d_R numbers per token
// for all heads, against MHA's 2·h·d_h. Each token up-projects every head's k_nope and v from
// the cached latents (the naive form) and runs the shared steps 6-14 on its one query; its
// output is row t of the one-shot causal MLA pass, to the bit.

#include <cstddef>
#include <cstdint>
#include <optional>

#include "core/forms/paged_kv.h"
#include "core/pass/attention.h"
#include "core/pass/mla.h"

namespace mha {

// x (B, T, d_model) decoded token by token with options.heads heads, options.rope on q_pe and
// k_pe, the window, sinks and soft-cap of `masks` (no attn_mask or key padding: decoding is
// causal by construction; throws mha::Error for them). Returns the T output rows
// (B, T, d_model) and the weights (B, h, T, T), zero above the diagonal (none streamed).
// With `paging`, the latent cache is paged in blocks of S positions of (c_kv, k_pe): the
// same bits.
ForwardResult decode_mla(const MlaWeights& weights, const Tensor& x, const Masks& masks,
                         const ForwardOptions& options, Tracer& tracer,
                         const KvPaging* paging = nullptr);

// The latent cache's sizes as core/forms/paged_kv.h's KvCache holds it: one "key/value head"
// whose keys are c_kv (d_c) and whose values are k_pe (d_R), B sequences of T positions.
Sizes latent_cache_sizes(const MlaSizes& sizes, std::size_t batch, std::size_t seq_len);

}  // namespace mha
