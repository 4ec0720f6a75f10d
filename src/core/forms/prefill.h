#pragma once
// Chunked prefill against a warm cache: the prompt's N tokens in chunks (5, 4, 3 of N = 12),
// as a serving engine feeds a long prompt. Chunk c projects only its own rows, appends its
// keys and values to the cache (which then holds the chunks before it too) and attends over
// everything cached: its queries see the whole prefix and, causally, their own chunk
// (bottom-right alignment: query i of the chunk at position p + i sees keys j <= p + i).
// Each chunk runs steps 6-14 of the packed pass, so every row equals the one-shot causal
// pass's to the bit.

#include <cstdint>
#include <vector>

#include "core/forms/paged_kv.h"
#include "core/pass/attention.h"

namespace mha {

// x: inputs.x_q (B, N, d_model), self-attention only, chunks summing to N (none 0); masks:
// the causal rule (bottom-right) and what the packed pass adds to it (window, ALiBi,
// soft-cap), no attn_mask or key padding mask. Returns the N output rows (B, N, d_model) and
// the weights (B, h, N, N), zero above the diagonal. Throws mha::Error otherwise. With
// `paging`, the cache is paged (core/forms/paged_kv.h): the same bits.
ForwardResult prefill(const Weights& weights, const Inputs& inputs, const Masks& masks,
                      const ForwardOptions& options, const std::vector<std::size_t>& chunks,
                      Tracer& tracer, const KvPaging* paging = nullptr);

}  // namespace mha
