#pragma once
// Autoregressive decoding with a KV cache: T tokens, one query at a time. Token t
// projects only its own row, appends its key and value to the cache (which then holds
// (B, G, t, d_k)) and attends over the t cached positions: scores (B, h, 1, t).
// Token t's output equals row t of the causal forward pass over all T tokens.

#include "core/forms/kv_quant.h"
#include "core/forms/paged_kv.h"
#include "core/pass/attention.h"

namespace mha {

// x: inputs.x_q (B, T, d_model), self-attention only; masks must be empty (decoding is
// causal by construction). Returns the T output rows (B, T, d_model) and the weights
// (B, h, T, T), zero above the diagonal. Throws mha::Error otherwise. With `paging`, the
// cache is paged (core/forms/paged_kv.h): the same bits. With quant on, the cache is
// quantised as it fills (core/forms/kv_quant.h) and attention reads it dequantised; a traced
// run also shows the error against a run over the float cache. Quantising takes no paging.
ForwardResult decode(const Weights& weights, const Inputs& inputs, const Masks& masks,
                     const ForwardOptions& options, Tracer& tracer,
                     const KvPaging* paging = nullptr, const KvQuant& quant = {});

}  // namespace mha
