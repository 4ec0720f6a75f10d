#pragma once
// What kind of pass runs: its form, the path steps 6-10 take, the key/value positions it
// appends, the block's order. The forms (core/forms/) and the options read these.

#include <cstddef>

namespace mha {

// How steps 6-10 run. Standard stores the (B, h, N, M) scores and weights and
// traces every step; Streaming runs them tile by tile with an online softmax,
// never stores the weights, and traces them as one step (see core/kernels/streaming.h).
enum class AttentionPath { Standard, Streaming };

// The form of the pass: what goes into steps 6-10 and how (the block wraps Packed).
enum class Form {
    Packed,    // Q, K, V projected whole, then split into heads by view and transpose
    FusedQkv,  // one (3·d_model, d_model) projection, split by view and permute
    PerHead,   // each head projects its own slices of W_q, W_k, W_v; the heads are concatenated
    Decode,    // one query at a time against a growing KV cache (causal self-attention)
    Mla,       // DeepSeek-V2's latent attention: heads made from the latent, then steps 6-14;
               // the absorbed form checks it (core/forms/mla_pass.h; own weights)
};

// Key/value positions appended to K and V after step 3 (nn.MultiheadAttention's add_bias_kv
// and add_zero_attn); Sizes::kv_len counts them, the inputs have kv_len - count() rows.
struct AppendedKv {
    bool bias_kv = false;    // bias_k, bias_v from the state dict
    bool zero_attn = false;  // a zero key and value, after bias_kv's
    std::size_t count() const { return (bias_kv ? 1 : 0) + (zero_attn ? 1 : 0); }
};

// The transformer block's order (core/forms/block.h): pre-LN (norm_first=True) or post-LN.
enum class BlockKind { Pre, Post };

}  // namespace mha
