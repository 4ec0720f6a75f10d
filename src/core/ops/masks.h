#pragma once
// The score rules of steps 7-9: Masks carries the soft-cap, what step 8 applies and step 9's
// normaliser from the command line to the pass and the kernels; HeadMask is one (batch, head)
// unit's view of it, made by unit_mask.

#include <cstddef>
#include <string>
#include <vector>

#include "core/ops/ops.h"
#include "core/sizes.h"
#include "core/tensor/tensor.h"

namespace mha {

struct Normaliser;  // a row of core/pass/score_rules.h's table

// Everything steps 7-9 apply besides the scale. The tensors are already additive (0 = may
// attend, -inf = blocked, anything else is added to the score as PyTorch does) and optional:
// a dry run reads only which kinds there are, so --shapes-only describes a pass without them.
// Query i is at position p = i + M − N, key j at j.
struct Masks {
    Tensor attn_mask;     // (N, M), (B, N, M) or (B·h, N, M); empty for none
    Tensor key_padding;   // (B, M); empty for none
    bool causal = false;  // the causal rule of core/ops/ops.h, aligned as causal_align says
    CausalAlign causal_align = CausalAlign::BottomRight;
    std::vector<std::string> notes;  // how the given mask files were read, in io/masks' words
    double softcap = 0.0;            // C > 0: step 7 ends with scores = C·tanh(scores / C)
    bool alibi = false;              // step 8 adds −m_i·|p − j|, m_i = alibi_slopes(h)[i]
    std::size_t window = 0;          // W > 0: step 8 keeps only keys p − W < j ≤ p (causal)
    std::size_t sinks = 0;           // with a window: the first S keys stay visible too
    const Normaliser* normaliser = nullptr;  // step 9's; null: the default (normaliser_of)

    bool has_attn_mask() const { return !attn_mask.empty(); }
    bool has_key_padding() const { return !key_padding.empty(); }
    // Whether step 8 changes any score (the soft-cap belongs to step 7).
    bool any() const {
        return has_attn_mask() || has_key_padding() || causal || alibi || window > 0;
    }
};

// What step 8 adds to one (batch, head) unit's (N, M) scores: this unit's slices of the
// masks' tensors and its ALiBi slope; the rules every unit shares are read from `masks`.
struct HeadMask {
    const Masks* masks = nullptr;    // the Masks this is a view of (never null once made)
    const float* attn = nullptr;     // (N, M) additive, row-major; null for none
    const float* padding = nullptr;  // (M) additive per key; null for none
    std::size_t n = 0, m = 0;        // N, M
    double alibi_slope = 0.0;        // this head's m_i; 0 without ALiBi

    // One past the last key query i may see under the causal mask or the window (which is
    // causal, bottom-right aligned); m without either.
    std::size_t key_end(std::size_t i) const {
        if (masks->window > 0) return causal_key_end(i, n, m, CausalAlign::BottomRight);
        return masks->causal ? causal_key_end(i, n, m, masks->causal_align) : m;
    }
};

// Unit (b, i)'s view of masks for scores of sizes.seq_len queries and sizes.kv_len keys: the
// attn_mask plane of batch b and head i, batch b's key padding row, head i's ALiBi slope.
// The view reads masks, which must outlive it. The one way a HeadMask is made.
HeadMask unit_mask(const Masks& masks, std::size_t b, std::size_t i, const Sizes& sizes);

}  // namespace mha
