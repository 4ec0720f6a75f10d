#pragma once
// Every size the forward pass depends on, in the shape legend: B, N, M, d_model, h, G.

#include <cstddef>

namespace mha {

struct Sizes {
    std::size_t batch;     // B
    std::size_t seq_len;   // N   queries
    std::size_t kv_len;    // M   keys and values
    std::size_t d_model;
    std::size_t kdim;      // features of x_k
    std::size_t vdim;      // features of x_v
    std::size_t heads;     // h
    std::size_t kv_heads;  // G: key/value heads, h for ordinary multi-head attention

    std::size_t d_k() const { return d_model / heads; }
};

}  // namespace mha
