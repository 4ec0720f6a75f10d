// The MLA form: x's projections, the cached latent and RoPE key, each head's Q, K and V
// (naive) or their absorbed counterparts, then the shared steps 6-14 for both.
//
// Shape legend: h heads, d_h the part of q and k without position, d_R the RoPE part, d_c the
// latent, d_v the value width.
//   1   queries = x q_projᵀ                    (B, N, h·(d_h + d_R))  per head [q_nope, q_pe]
//   2   [c_kv, k_pe] = x kv_a_proj_with_mqaᵀ   (B, N, d_c + d_R); c_kv RMSNormed, cached
//   3   kv = c_kv kv_b_projᵀ                   (B, N, h·(d_h + d_v))  per head [k_nope, v]
//   5   RoPE on q_pe and k_pe; Q = [q_nope, q_pe], K = [k_nope, k_pe]  (B, h, N, d_h + d_R),
//       V (B, h, N, d_v): k_pe is one key part shared by every head
//   6-14 the shared steps (core/pass/attention.h), scaled by 1/sqrt(d_h + d_R)
// Absorbed: q_nope W_UK (B, h, N, d_c) beside q_pe scores the cached [c_kv, k_pe] itself,
// one key head for all (multi-query); the context (B, h, N, d_c) meets W_UV folded into W_o.

#include "core/forms/mla_pass.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/checked.h"
#include "core/error.h"
#include "core/forms/mla_parts.h"
#include "core/ops/ops.h"
#include "core/ops/rms_norm.h"
#include "core/pass/describe.h"
#include "core/pass/projection.h"
#include "core/pass/shape_checks.h"
#include "core/pass/score_rules.h"
#include "core/position/rope.h"

namespace mha {

namespace {

// 1, 2: the shown projections and the cached latent.
void show_parts(const MlaParts& parts, const MlaSizes& m, PassTrace& trace) {
    const std::size_t B = parts.kv_a.size(0), N = parts.kv_a.size(1), E = m.d_model, h = m.heads;
    const std::size_t d_h = m.d_nope, d_R = m.d_rope, d_c = m.d_latent;
    trace.show(parts.queries, [&] {
        return described(Operand::Q, StepKind::Project, 1, "project", "Q",
                         "Q = x @ q_proj.T  (per head [q_nope, q_pe])", {"B", "N", "h·(d_h+d_R)"},
                         macs_of({B, N, h * (d_h + d_R), E}));
    });
    trace.show(parts.kv_a, [&] {
        return described(StepKind::LatentProject, 2, "project", "kv_a",
                         "c_kv, k_pe = (x @ kv_a_proj_with_mqa.T).split([d_c, d_R], -1)",
                         {"B", "N", "d_c+d_R"}, macs_of({B, N, d_c + d_R, E}));
    });
    trace.show(parts.latent, [&] {
        Step step = described(StepKind::LatentNorm, 2, "rms_norm", "c_kv",
                              "c_kv = kv_a_layernorm(c_kv)", {"B", "N", "d_c"});
        step.facts.mla = mla_facts(m, N, false);
        step.facts.mla->ledger = true;
        return step;
    });
}

// 3, 5, then the shared 6-14: the naive form, traced.
ForwardResult run_naive(const MlaWeights& w, const MlaParts& parts, const MlaSizes& m,
                        const Masks& masks, const ForwardOptions& o, PassTrace& trace) {
    const std::size_t B = parts.latent.size(0), N = parts.latent.size(1), h = m.heads;
    const std::size_t d_h = m.d_nope, d_R = m.d_rope, kv_step = d_h + m.d_v;
    const Sizes s = mla_naive_sizes(m, B, N);
    const Tensor kv = project(parts.latent, w.w_kv_b, Tensor(), o.threads, o.workspace);  // 3
    check_finite(kv, "kv_b_proj");
    trace.show(kv, [&] {
        Step step = described(
            StepKind::LatentUp, 3, "project", "kv",
            "k_nope, V = (c_kv @ kv_b_proj.T).view(B, N, h, d_h+d_v).split([d_h, d_v], -1)",
            {"B", "N", "h·(d_h+d_v)"}, macs_of({B, N, h * kv_step, m.d_latent}));
        step.facts.mla = mla_facts(m, N, false);
        return step;
    });
    trace.show(parts.rope_key, [&] {  // 5: k_pe and q_pe rotated
        Step step = described(StepKind::Rope, 5, "rope", "k_pe",
                              "k_pe = rope(k_pe); q_pe = rope(q_pe) in every head",
                              {"B", "N", "d_R"});
        if (o.rope) {
            Sizes rope_sizes = s;  // the RoPE part is d_R wide: the angles of its pairs
            rope_sizes.head_dim = d_R;
            step.facts.rope = rope_facts(*o.rope, rope_sizes);
        }
        return step;
    });
    KeyValueHeads kv_heads = key_value_heads(kv, parts.rope_key, m, o.workspace);
    HeadTensors heads{query_heads(parts, m, o.workspace), std::move(kv_heads.k),
                      std::move(kv_heads.v)};
    const auto joined = [&](const Tensor& t, Operand operand, const char* name,
                            std::string expression, const std::string& width_name,
                            std::string einops) {
        trace.show(t, [&] {
            Step step = described(operand, StepKind::AssembleHeads, 5, "cat", name,
                                  std::move(expression), {"B", "h", "N", width_name});
            step.copied_bytes = macs_of({B, h, N, t.size(3), sizeof(float)});
            step.einops = std::move(einops);
            return step;
        });
    };
    joined(heads.q, Operand::Q, "Q", "Q = cat([q_nope, q_pe], -1).transpose(1, 2)", "d_k",
           "pack 'b n h *', then b n h d -> b h n d");
    joined(heads.k, Operand::K, "K",
           "K = cat([k_nope, k_pe.expand(B, N, h, d_R)], -1).transpose(1, 2)", "d_k",
           "repeat b n r -> b n h r, pack 'b n h *', then b n h d -> b h n d");
    joined(heads.v, Operand::V, "V", "V = V.transpose(1, 2).contiguous()", v_dim_name(s),
           s.d_v() == s.d_k() ? "b n h d -> b h n d" : "b n h dv -> b h n dv");
    Weights out;
    out.w_o = w.w_o;
    return forward_from_heads(out, std::move(heads), masks, s, shared_options(o), trace);
}

// W_o (d_model, h·d_v) with each head's W_UV (d_v, d_c) folded in: (d_model, h·d_c).
Tensor folded_output(const MlaWeights& w, const MlaSizes& m, Workspace* workspace) {
    const std::size_t E = m.d_model, h = m.heads, d_c = m.d_latent, d_v = m.d_v;
    if (any_dry(w.w_o, w.w_kv_b)) return new_dry(workspace, {E, h * d_c});
    Tensor folded = new_uninitialised(workspace, {E, h * d_c});
    for (std::size_t i = 0; i < h; ++i) {
        const MatrixView w_o_head{w.w_o.data() + i * d_v, E, d_v, h * d_v, 1};
        const MatrixView w_uv{w.w_kv_b.data() + (i * (m.d_nope + d_v) + m.d_nope) * d_c, d_v, d_c,
                              d_c, 1};
        matmul(w_o_head, w_uv, folded.data() + i * d_c, h * d_c);
    }
    return folded;
}

// The absorbed form through the shared 6-14, untraced: queries [q_nope W_UK, q_pe]
// (B, h, N, d_c + d_R) against one key head [c_kv, k_pe] and one value head c_kv.
ForwardResult run_absorbed(const MlaWeights& w, const MlaParts& parts, const MlaSizes& m,
                           const Masks& masks, const ForwardOptions& o) {
    const std::size_t B = parts.latent.size(0), N = parts.latent.size(1), h = m.heads;
    const std::size_t d_h = m.d_nope, d_c = m.d_latent, width = d_c + m.d_rope;
    const std::size_t q_width = d_h + m.d_rope;
    HeadTensors heads{new_uninitialised(o.workspace, {B, h, N, width}),
                      new_uninitialised(o.workspace, {B, 1, N, width}),
                      parts.latent.view({B, 1, N, d_c})};
    if (!any_dry(parts.queries, w.w_kv_b, heads.q)) {
        for (std::size_t b = 0; b < B; ++b) {
            for (std::size_t i = 0; i < h; ++i) {
                const MatrixView q_nope{parts.queries.data() + b * N * h * q_width + i * q_width,
                                        N, d_h, h * q_width, 1};
                const MatrixView w_uk{w.w_kv_b.data() + i * (d_h + m.d_v) * d_c, d_h, d_c, d_c, 1};
                matmul(q_nope, w_uk, heads.q.data() + (b * h + i) * N * width, width);
            }
        }
    }
    put_part(heads.q, d_c, parts.q_pe);
    copy_heads(HeadsCopy::IntoHeads, parts.latent, heads.k, 0, 0, 0, d_c);
    copy_heads(HeadsCopy::IntoHeads, parts.rope_key, heads.k, d_c, 0, 0, m.d_rope);
    Weights out;
    out.w_o = folded_output(w, m, o.workspace);
    ForwardOptions absorbed = shared_options(o);
    absorbed.keep = nullptr;  // the backward reads the naive form's
    absorbed.scale_base = o.scale_base > 0 ? o.scale_base : double(q_width);  // as the naive form
    absorbed.flash_row.reset();
    NullTracer none;
    PassTrace untraced(none);
    return forward_from_heads(out, std::move(heads), masks, mla_absorbed_sizes(m, B, N), absorbed,
                              untraced);
}

// max |a − b| over two tensors of one shape, in double (NaN pairs ignored).
double max_difference(const Tensor& a, const Tensor& b) {
    const Tensor x = a.contiguous(), y = b.contiguous();
    double worst = 0.0;
    for (std::size_t i = 0; i < x.numel(); ++i) {
        worst = std::max(worst, std::fabs(double(x.data()[i]) - double(y.data()[i])));
    }
    return worst;
}

// MLA's cross-check after step 14: the absorbed form's weights (standard path) and output,
// computed through the same shared steps and each compared with the naive form's.
void show_absorbed(const ForwardResult& absorbed, const ForwardResult& naive, const MlaSizes& m,
                   const Masks& masks, const ForwardOptions& o, PassTrace& trace) {
    const std::size_t B = absorbed.output.size(0), N = absorbed.output.size(1);
    const std::size_t E = m.d_model, h = m.heads, d_h = m.d_nope, d_R = m.d_rope;
    const std::size_t d_c = m.d_latent;
    const auto sum = [](std::initializer_list<std::uint64_t> terms) {
        return checked_sum(terms, "the multiply-adds");
    };
    const std::uint64_t queries = macs_of({B, h, N, d_h, d_c});     // q_nope @ W_UK
    const std::uint64_t scores = macs_of({B, h, N, N, d_c + d_R});  // 6
    const std::uint64_t context = macs_of({B, h, N, N, d_c});       // 10
    const std::uint64_t output = sum({macs_of({B, N, E, h * d_c}),  // 14
                                      macs_of({E, h, m.d_v, d_c})});  // W_UV folded into W_o
    const bool standard = o.path == AttentionPath::Standard;
    const auto compared = [&](const Tensor& value, const Tensor& naive_value, Step step) {
        step.facts.mla = mla_facts(m, N, true);
        if (!any_dry(value, naive_value))
            step.facts.mla->max_difference = max_difference(value, naive_value);
        return step;
    };
    if (standard) {
        trace.show(absorbed.weights, [&] {
            return compared(
                absorbed.weights, naive.weights,
                described(StepKind::AbsorbedWeights, 9, normaliser_of(masks).name,
                          "weights_absorbed",
                          "weights = " + normaliser_of(masks).applied(
                                             "((q_nope @ W_UK) @ c_kv.mT + q_pe @ k_pe.mT)" +
                                             scale_suffix(o.scale, o.scale_base) + " + mask"),
                          {"B", "h", "N", "N"}, sum({queries, scores})));
        });
    }
    trace.show(absorbed.output, [&] {
        return compared(absorbed.output, naive.output,
                        described(StepKind::AbsorbedOutput, 14, "project", "output_absorbed",
                                  "output = cat_h(weights @ c_kv) @ (o_proj.weight · W_UV per head).T",
                                  {"B", "N", "d_model"},
                                  standard ? sum({context, output})
                                           : sum({queries, scores, context, output})));
    });
}

// The MLA sizes of options.heads heads, checked against x (B, N, d_model), the masks and
// the head to ablate.
}  // namespace

MlaSizes check_mla(const MlaWeights& w, const Tensor& x, const Masks& masks,
                   const ForwardOptions& options) {
    const MlaSizes m = mla_sizes(w, options.heads);
    if (x.dim() != 3 || x.size(2) != m.d_model) {
        throw Error("MLA: input " + to_string(x.shape()) +
                    " is not (B, N, d_model = " + std::to_string(m.d_model) + ")");
    }
    check_masks(masks, mla_naive_sizes(m, x.size(0), x.size(1)));
    check_dry_workspace(x, options);
    if (options.path == AttentionPath::Streaming) require_streamed(masks);
    if (options.ablate_head && *options.ablate_head >= m.heads) {
        throw Error("cannot ablate head " + std::to_string(*options.ablate_head) +
                    ": the heads are 0.." + std::to_string(m.heads - 1));
    }
    return m;
}

MlaResult mla_forward(const MlaWeights& w, const Tensor& x, const Masks& masks,
                      const ForwardOptions& options, MlaForm form) {
    const MlaSizes m = check_mla(w, x, masks, options);
    const MlaParts parts = project_parts(w, x, m, options, 0);
    NullTracer none;
    PassTrace untraced(none);
    const ForwardResult r = form == MlaForm::Naive
                                ? run_naive(w, parts, m, masks, options, untraced)
                                : run_absorbed(w, parts, m, masks, options);
    return {r.output, r.weights, parts.latent, parts.rope_key, r.fully_masked_rows};
}

ForwardResult forward_mla(const MlaWeights& w, const Tensor& x, const Masks& masks,
                          const ForwardOptions& options, Tracer& tracer) {
    check_mla(w, x, masks, options);
    PassTrace trace(tracer);
    return forward_mla(w, x, masks, options, trace, nullptr);
}

ForwardResult forward_mla(const MlaWeights& w, const Tensor& x, const Masks& masks,
                          const ForwardOptions& options, PassTrace& trace, MlaKept* keep) {
    const MlaSizes m = mla_sizes(w, options.heads);
    show_inputs(Inputs{x, x, x}, trace);  // 0
    const MlaParts parts = project_parts(w, x, m, options, 0, keep ? &keep->latent_raw : nullptr);
    show_parts(parts, m, trace);                                          // 1, 2
    ForwardResult naive = run_naive(w, parts, m, masks, options, trace);  // 3, 5, 6-14
    const ForwardResult absorbed = run_absorbed(w, parts, m, masks, options);
    show_absorbed(absorbed, naive, m, masks, options, trace);  // 9, 14 absorbed
    if (keep) keep->latent = parts.latent;
    return naive;
}

}  // namespace mha
