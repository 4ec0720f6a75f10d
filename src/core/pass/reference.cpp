// Reference forward pass: linear_rows, matmul, scale and the masks from core/ops, the
// normaliser's reference row, with RMSNorm, RoPE, the soft-cap, ALiBi and the window from
// their own files, called in the order of the 14 steps.

#include "core/pass/reference.h"

#include <cmath>

#include "core/ops/ops.h"
#include "core/ops/rms_norm.h"
#include "core/ops/softcap.h"
#include "core/pass/score_rules.h"
#include "core/pass/shape_checks.h"
#include "core/position/position_bias.h"

namespace mha {

namespace {

// x (B, L, in) -> x Wᵀ + b (B, L, out)
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias) {
    const Tensor packed = x.contiguous();
    Tensor y({x.size(0), x.size(1), w.size(0)});
    linear_rows(packed, w, bias, y, 0, x.size(0) * x.size(1));
    return y;
}

// (B, L, h·d_k) -> (B, h, L, d_k), a view
Tensor heads_of(const Tensor& t, std::size_t heads) {
    return t.view({t.size(0), t.size(1), heads, t.size(2) / heads}).transpose(1, 2);
}

}  // namespace

ForwardResult reference_forward(const Weights& w, const Inputs& in, const Masks& masks,
                                std::size_t heads, bool zero_masked_rows,
                                const std::optional<Rope>& rope) {
    const Sizes s = check_shapes(w, in, masks, heads);
    const std::size_t B = s.batch, N = s.seq_len, M = s.kv_len, h = s.heads, d_k = s.d_k();
    Tensor q = heads_of(linear(in.x_q, w.w_q, w.b_q), h);        // (B, h, N, d_k)
    Tensor k = heads_of(linear(in.x_k, w.w_k, w.b_k), h);        // (B, h, M, d_k)
    const Tensor v = heads_of(linear(in.x_v, w.w_v, w.b_v), h);  // (B, h, M, d_k)
    if (!w.q_norm.empty()) {  // 5: QK-norm, then RoPE; the queries are the last N positions
        rms_norm_rows(q, w.q_norm);
        rms_norm_rows(k, w.k_norm);
    }
    if (rope) {
        apply_rope(q, *rope, M - N);
        apply_rope(k, *rope, 0);
    }
    ForwardResult result;
    result.weights = Tensor({B, h, N, M});
    Tensor context({B, h, N, d_k});
    const float factor = float(1.0 / std::sqrt(double(d_k)));
    for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t i = 0; i < h; ++i) {
            float* scores = result.weights.data() + (b * h + i) * N * M;
            matmul(head_matrix(q, b, i), head_matrix(k, b, i).transposed(), scores, M);
            scale(scores, N * M, factor);
            if (masks.softcap > 0.0) softcap(scores, N * M, masks.softcap);
            if (!masks.attn_mask.empty()) {
                const bool per_head =
                    masks.attn_mask.dim() == 3 && masks.attn_mask.size(0) == B * h;
                const std::size_t plane = masks.attn_mask.dim() == 2 ? 0 : per_head ? b * h + i : b;
                add_mask(scores, masks.attn_mask.data() + plane * N * M, N * M);
            }
            if (!masks.key_padding.empty())
                add_key_padding(scores, masks.key_padding.data() + b * M, N, M);
            const ScoreBlock grid{scores, N, M, M, M - N, 0};
            if (masks.alibi) add_alibi(grid, alibi_slopes(h)[i]);
            if (masks.causal) apply_causal(scores, N, M, masks.causal_align);
            if (masks.window > 0) apply_window(grid, {masks.window, masks.sinks});
            result.fully_masked_rows +=
                normaliser_of(masks).reference(scores, N, M, zero_masked_rows);
            matmul(head_matrix(result.weights, b, i), head_matrix(v, b, i),
                   context.data() + (b * h + i) * N * d_k, d_k);
        }
    }
    const Tensor concat = context.transpose(1, 2).contiguous().view({B, N, s.inner()});
    result.output = linear(concat, w.w_o, w.b_o);
    return result;
}

}  // namespace mha
