#pragma once
// Grouped-query attention: which key/value head each query head reads, and what
// sharing saves. h query heads share G key/value heads (G divides h): G = h is
// ordinary multi-head attention, G = 1 multi-query, anything between grouped.

#include "core/sizes.h"

#include <cstddef>
#include <string>
#include <vector>

namespace mha {

// Query head i reads key/value head i / (h / G), as K.repeat_interleave(h / G, dim=1) pairs them.
inline std::size_t kv_head_of(std::size_t head, std::size_t heads, std::size_t kv_heads) {
    return head / (heads / kv_heads);
}

// "query heads 0-1 read K/V head 0", one line per key/value head.
std::vector<std::string> kv_sharing_notes(std::size_t heads, std::size_t kv_heads);

// How PyTorch code writes the sharing: K.repeat_interleave(h // G, dim=1), here without the copy.
std::string kv_repeat_note(std::size_t heads, std::size_t kv_heads);

// The layer's projection weights (W_q, W_k, W_v, W_o, without biases) and the float32
// KV cache per token and per sequence of M tokens, for G = h (MHA), this run's G (GQA)
// and G = 1 (MQA), side by side.
std::vector<std::string> kv_cost_notes(const Sizes& sizes);

}  // namespace mha
