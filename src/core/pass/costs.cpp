// What one forward pass costs, from its sizes alone: its multiply-adds and the kernels' scratch
// bytes, counted without overflow.

#include "core/pass/costs.h"

#include <algorithm>
#include <string>

#include "core/checked.h"
#include "core/kernels/kernels.h"
#include "core/kernels/streaming.h"
#include "core/kernels/streaming_backward.h"

namespace mha {

std::uint64_t forward_macs(const Sizes& s) {
    const std::string what = "the multiply-adds of this configuration";
    return checked_sum(
        {checked_product(
             {s.batch, s.seq_len, s.d_model, checked_sum({s.inner(), s.value_inner()}, what)},
             what),                                                                // Q, W_O
         checked_product({s.batch, s.kv_len, s.kv_heads, s.d_k(), s.kdim}, what),  // K: G·d_k
         checked_product({s.batch, s.kv_len, s.kv_heads, s.d_v(), s.vdim}, what),  // V: G·d_v
         checked_product(
             {s.batch, s.seq_len, s.kv_len, s.heads, checked_sum({s.d_k(), s.d_v()}, what)},
             what)},  // 6 and 10
        what);
}

std::uint64_t scratch_bytes(const Sizes& s, AttentionPath path, bool backward) {
    const bool standard = path == AttentionPath::Standard;
    const std::size_t d_k = s.d_k(), d_v = s.d_v();
    const std::size_t in = std::max({s.d_model, s.kdim, s.vdim});
    // packing buffers only grow, so a thread may keep the projections' (Q, K and V fused
    // for self-attention) and the attention's
    std::uint64_t floats =
        std::uint64_t(linear_scratch_floats(in, s.inner() + s.kv_heads * (d_k + d_v), 3)) +
        (standard ? std::max(gemm_scratch_floats(d_k, s.kv_len), gemm_scratch_floats(s.kv_len, d_v))
                  : streaming_scratch_floats(d_k, d_v, s.kv_len));
    if (backward) {
        // the gradients' products: at most a block of depth, any of the widths (dW = dYᵀ X
        // sums over every row); and the streaming backward's tiles
        const std::size_t rows = s.batch * std::max(s.seq_len, s.kv_len);
        floats += gemm_scratch_floats(std::max({rows, s.kv_len, in}),
                                      std::max({s.kv_len, in, s.inner(), s.value_inner()}));
        if (!standard) floats += streaming_backward_scratch_floats(s.seq_len, d_k, d_v);
    }
    return checked_product({floats, sizeof(float)}, "the memory for this configuration");
}

}  // namespace mha
