// One (batch, head) unit's view of the masks.

#include "core/ops/masks.h"

#include "core/position/position_bias.h"

namespace mha {

HeadMask unit_mask(const Masks& masks, std::size_t b, std::size_t i, const Sizes& s) {
    HeadMask mask;
    mask.masks = &masks;
    const Tensor& attn = masks.attn_mask;
    if (!attn.empty()) {  // one plane for all, one per batch row, or one per (batch, head)
        const std::size_t plane = attn.dim() == 2                     ? 0
                                  : attn.size(0) == s.batch * s.heads ? b * s.heads + i
                                                                      : b;
        mask.attn = attn.data() + plane * s.seq_len * s.kv_len;
    }
    if (!masks.key_padding.empty()) mask.padding = masks.key_padding.data() + b * s.kv_len;
    mask.n = s.seq_len;
    mask.m = s.kv_len;
    if (masks.alibi) mask.alibi_slope = alibi_slopes(s.heads)[i];
    return mask;
}

}  // namespace mha
