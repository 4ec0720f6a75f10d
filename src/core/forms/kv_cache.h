#pragma once
// The rows a cached form feeds and the weights it keeps: decoding (a row at a time) and
// chunked prefill (a chunk of rows at a time) do each the same way (the cache: paged_kv.h).

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/pass/score_rules.h"
#include "core/pass/step.h"
#include "core/tensor/tensor.h"
#include "core/tensor/workspace.h"

namespace mha {

// Rows [first, first + count) of x (B, T, E) as a (B, count, E) tensor of their own.
Tensor sequence_rows(const Tensor& x, std::size_t first, std::size_t count, Workspace* workspace);

// Rows of part (B, c, E) into rows [first, first + c) of all (B, T, E): a chunk's (or a
// token's) output rows among the whole sequence's. Nothing in a dry run.
void put_rows(const Tensor& part, std::size_t first, Tensor& all);

// Rows [0, c) of each (b, h) block of part (B, h, c, m) into rows [first, first + c) of all
// (B, h, N, N), columns [0, m): a chunk's (or a token's) weights among the whole sequence's.
// Nothing without weights (the streaming path) or in a dry run.
void keep_weight_rows(const Tensor& part, std::size_t first, Tensor& all);

// A cached form's step 9, the weights (B, h, rows, keys), or streamed its step 10, the context
// (B, h, rows, d_k): each of the B·h·rows queries reads `read` cached keys (in all); `scores` is
// the expression the normaliser takes.
Step cached_attend_step(const Normaliser& normaliser, const std::string& scores, bool streamed,
                        const std::string& rows, const std::string& keys, std::uint64_t batch,
                        std::uint64_t heads, std::uint64_t read, std::uint64_t d_k);

}  // namespace mha
