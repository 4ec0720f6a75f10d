#pragma once
// Grouped-query attention: which key/value head each query head reads. h query heads
// share G key/value heads (G divides h): G = h is ordinary multi-head attention, G = 1
// multi-query, anything between grouped. show/notes.h words what sharing saves.

#include <cstddef>

namespace mha {

// Query head i reads key/value head i / (h / G), as K.repeat_interleave(h / G, dim=1) pairs them.
inline std::size_t kv_head_of(std::size_t head, std::size_t heads, std::size_t kv_heads) {
    return head / (heads / kv_heads);
}

}  // namespace mha
