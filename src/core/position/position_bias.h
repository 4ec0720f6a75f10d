#pragma once
// What the positions of a query and a key add at step 8: ALiBi's linear bias, and the
// sliding window (with attention sinks) that limits which keys a query sees.

#include <cstddef>
#include <vector>

namespace mha {

// Press et al. 2022: for h a power of two, slope i = 2^(-8(i+1)/h). Otherwise the h' slopes
// of the largest power of two h' < h, then slopes 0, 2, 4, ... of 2h' until there are h.
std::vector<double> alibi_slopes(std::size_t heads);

// A block of one head's scores, row-major with rows `row_stride` apart: n queries at
// positions first_query, first_query + 1, ... and m keys at first_key, first_key + 1, ...
struct ScoreBlock {
    float* data;
    std::size_t n, m, row_stride;
    std::size_t first_query;  // M − N for the whole (N, M) grid: queries are the last N positions
    std::size_t first_key;    // 0 for the whole grid
};

// scores[p, j] += −slope · |p − j|, in double.
void add_alibi(const ScoreBlock& block, double slope);

// Mistral's sliding window with StreamingLLM's sinks: the query at position p sees the key
// at j iff j ≤ p and (p − W < j or j < S).
struct Window {
    std::size_t size;       // W ≥ 1
    std::size_t sinks = 0;  // S
};
bool window_allows(const Window& window, std::size_t p, std::size_t j);

// −inf where window_allows is false.
void apply_window(const ScoreBlock& block, const Window& window);

// How many of the positions 0..M−1 a query at position M − 1 (and so a KV cache) still
// needs: the last W and the first S, at most M.
std::size_t window_cache_positions(const Window& window, std::size_t m);

}  // namespace mha
