#pragma once
// MLA as a form of the pass (--form mla): the naive form builds each head's Q, K and V from
// the latent and runs the shared steps 6-14 on them; the absorbed form, MLA's own
// cross-check, folds W_UK into the query and W_UV into W_o and runs the same steps as
// multi-query attention over the cached latent.

#include <cstddef>
#include <cstdint>

#include "core/pass/attention.h"
#include "core/pass/mla.h"

namespace mha {

enum class MlaForm { Naive, Absorbed };

struct MlaResult {
    Tensor output;                      // (B, N, d_model)
    Tensor weights;                     // (B, h, N, N); empty on the streaming path
    Tensor latent;                      // (B, N, d_c)  what the cache keeps per token
    Tensor rope_key;                    // (B, N, d_R)  the shared RoPE key, rotated, cached too
    std::size_t fully_masked_rows = 0;  // (b, h, n) rows that had no key left to attend to
};

// x (B, N, d_model) through one form, untraced: self-attention over positions 0..N−1 with
// options.heads heads, options.rope on q_pe and k_pe, step 7 dividing by sqrt(d_h + d_R)
// (or as options.scale / scale_base say), the masks of step 8 as in every form.
MlaResult mla_forward(const MlaWeights& weights, const Tensor& x, const Masks& masks,
                      const ForwardOptions& options, MlaForm form);

// Both forms, traced: the naive form's steps (the shared 6-14 among them), then the absorbed
// form's weights (standard path) and output with their largest difference from the naive
// ones. The result is the naive form's.
ForwardResult forward_mla(const MlaWeights& weights, const Tensor& x, const Masks& masks,
                          const ForwardOptions& options, Tracer& tracer);

// The sizes the weights imply for options.heads heads, checked against x (B, N, d_model), the
// masks, the path and the head to ablate (throws mha::Error).
MlaSizes check_mla(const MlaWeights& weights, const Tensor& x, const Masks& masks,
                   const ForwardOptions& options);

// What MLA's own steps 1-3 keep for their backward; the shared steps keep theirs in
// options.keep.
struct MlaKept {
    Tensor latent_raw;  // (B, N, d_c)  c_kv before the RMSNorm
    Tensor latent;      // (B, N, d_c)  c_kv after it: what kv_b_proj read
};

// forward_mla on a trace the caller started (the backward's steps may follow); `keep`, when
// given, receives what MLA's own steps keep. Sizes checked by check_mla.
ForwardResult forward_mla(const MlaWeights& weights, const Tensor& x, const Masks& masks,
                          const ForwardOptions& options, PassTrace& trace, MlaKept* keep);

}  // namespace mha
