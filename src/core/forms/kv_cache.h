#pragma once
// The rows a cached form feeds and the cache it fills: decoding (a row at a time) and
// chunked prefill (a chunk of rows at a time) write keys and values the same way.

#include <cstddef>

#include "core/tensor/tensor.h"
#include "core/tensor/workspace.h"

namespace mha {

// Rows [first, first + count) of x (B, T, E) as a (B, count, E) tensor of their own.
Tensor sequence_rows(const Tensor& x, std::size_t first, std::size_t count, Workspace* workspace);

// Writes the (B, L, G·d_k) projection of L rows into positions [first, first + L) of the
// (B, G, T, d_k) cache.
void cache_rows(const Tensor& projected, std::size_t first, Tensor& cache);

}  // namespace mha
