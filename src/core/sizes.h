#pragma once
// Every size the forward pass depends on, in the shape legend: B, N, M, d_model, h, G, d_k, d_v.

#include <cstddef>

namespace mha {

struct Sizes {
    std::size_t batch;    // B
    std::size_t seq_len;  // N   queries
    std::size_t kv_len;   // M   keys and values
    std::size_t d_model;
    std::size_t kdim;           // features of x_k
    std::size_t vdim;           // features of x_v
    std::size_t heads;          // h
    std::size_t kv_heads;       // G: key/value heads, h for ordinary multi-head attention
    std::size_t head_dim;       // d_k: d_model / h unless the heads are wider (--head-dim, Gemma 2)
    std::size_t value_dim = 0;  // d_v: each head's value width; 0 for d_k (MLA's differs)

    std::size_t d_k() const { return head_dim; }
    std::size_t d_v() const { return value_dim == 0 ? head_dim : value_dim; }
    std::size_t inner() const { return heads * head_dim; }     // h·d_k: Q's width
    std::size_t value_inner() const { return heads * d_v(); }  // h·d_v: the context, the concat
};

}  // namespace mha
