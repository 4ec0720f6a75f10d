// MLA's projections of x into its parts, and the naive form's heads made from them.
//
//   1   queries = x q_projᵀ                    (B, L, h·(d_h + d_R))  per head [q_nope, q_pe]
//   2   [c_kv, k_pe] = x kv_a_proj_with_mqaᵀ   (B, L, d_c + d_R); c_kv RMSNormed
//       RoPE on q_pe and k_pe at positions first_position + l
//   5   Q = [q_nope, q_pe], K = [k_nope, k_pe] (k_pe shared), V: the naive form's heads

#include "core/forms/mla_parts.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "core/ops/rms_norm.h"
#include "core/pass/projection.h"
#include "core/position/rope.h"

namespace mha {

namespace {

// Features [first, first + width) of every row of x (B, L, W), copied: (B, L, width).
Tensor features(const Tensor& x, std::size_t first, std::size_t width, Workspace* workspace) {
    const std::size_t rows = x.size(0) * x.size(1), W = x.size(2);
    if (x.dry()) return new_dry(workspace, {x.size(0), x.size(1), width});
    Tensor out = new_uninitialised(workspace, {x.size(0), x.size(1), width});
    for (std::size_t r = 0; r < rows; ++r) {
        const float* from = x.data() + r * W + first;
        std::copy(from, from + width, out.data() + r * width);
    }
    return out;
}

}  // namespace

// heads[..., at : at + d] = part for heads (B, h, L, ·) and part (B, h, L, d).
void put_part(Tensor& heads, std::size_t at, const Tensor& part) {
    if (any_dry(heads, part)) return;
    const std::size_t rows = part.numel() / part.size(3), d = part.size(3), W = heads.size(3);
    for (std::size_t r = 0; r < rows; ++r) {
        std::copy(part.data() + r * d, part.data() + (r + 1) * d, heads.data() + r * W + at);
    }
}

void check_finite(const Tensor& y, const char* name, std::size_t first_position) {
    if (y.dry()) return;
    const std::size_t width = y.size(2), length = y.size(1);
    for (std::size_t i = 0; i < y.numel(); ++i) {
        if (!std::isfinite(y.data()[i])) {
            const std::size_t row = i / width;
            throw Error(std::string(name) + " overflows float32 at batch " +
                        std::to_string(row / length) + ", position " +
                        std::to_string(first_position + row % length) +
                        ": the inputs or weights are too large for float32");
        }
    }
}

MlaParts project_parts(const MlaWeights& w, const Tensor& x, const MlaSizes& m,
                       const ForwardOptions& o, std::size_t first_position, Tensor* latent_raw) {
    const std::size_t B = x.size(0), L = x.size(1), width = m.d_nope + m.d_rope;
    Workspace* const workspace = o.workspace;
    const Tensor input = x.contiguous();
    MlaParts parts;
    parts.queries = project(input, w.w_q, Tensor(), o.threads, workspace);
    check_finite(parts.queries, "q_proj", first_position);
    parts.kv_a = project(input, w.w_kv_a, Tensor(), o.threads, workspace);
    check_finite(parts.kv_a, "kv_a_proj_with_mqa", first_position);
    parts.latent = features(parts.kv_a, 0, m.d_latent, workspace);
    if (latent_raw) *latent_raw = features(parts.kv_a, 0, m.d_latent, workspace);
    rms_norm_rows(parts.latent, w.kv_norm);
    parts.rope_key = features(parts.kv_a, m.d_latent, m.d_rope, workspace);
    parts.q_pe = new_uninitialised(workspace, {B, m.heads, L, m.d_rope});
    copy_heads(HeadsCopy::IntoHeads, parts.queries, parts.q_pe, 0, m.d_nope, width, m.d_rope);
    if (o.rope) {
        Tensor k_pe = parts.rope_key.view({B, 1, L, m.d_rope});  // shares rope_key's storage
        apply_rope(k_pe, *o.rope, first_position);
        apply_rope(parts.q_pe, *o.rope, first_position);
    }
    return parts;
}

Tensor query_heads(const MlaParts& parts, const MlaSizes& m, Workspace* workspace) {
    const std::size_t B = parts.queries.size(0), L = parts.queries.size(1);
    const std::size_t width = m.d_nope + m.d_rope;
    Tensor q = new_uninitialised(workspace, {B, m.heads, L, width});
    copy_heads(HeadsCopy::IntoHeads, parts.queries, q, 0, 0, width, m.d_nope);
    put_part(q, m.d_nope, parts.q_pe);
    return q;
}

KeyValueHeads key_value_heads(const Tensor& kv, const Tensor& rope_key, const MlaSizes& m,
                              Workspace* workspace) {
    const std::size_t B = kv.size(0), M = kv.size(1), h = m.heads, d_h = m.d_nope;
    const std::size_t kv_step = d_h + m.d_v;
    KeyValueHeads heads{new_uninitialised(workspace, {B, h, M, d_h + m.d_rope}),
                        new_uninitialised(workspace, {B, h, M, m.d_v})};
    copy_heads(HeadsCopy::IntoHeads, kv, heads.k, 0, 0, kv_step, d_h);
    copy_heads(HeadsCopy::IntoHeads, rope_key, heads.k, d_h, 0, 0, m.d_rope);
    copy_heads(HeadsCopy::IntoHeads, kv, heads.v, 0, d_h, kv_step, m.d_v);
    return heads;
}

ForwardOptions shared_options(const ForwardOptions& o) {
    ForwardOptions shared = o;
    shared.rope.reset();
    shared.packed = nullptr;
    return shared;
}

}  // namespace mha
