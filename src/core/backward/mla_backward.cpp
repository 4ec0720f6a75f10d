// The MLA form's backward, each gradient beside the forward line it differentiates, in the order
// core/pass/plan_backward.cpp plans them after the shared b14-b6:
//
//   5   Q = [q_nope, rope(q_pe)]          dq_pe = rope⁻¹(dQ[..., d_h:])
//   5   K = [k_nope, rope(k_pe) per head] dk_pe = rope⁻¹(Σ_heads dK[..., d_h:])  (k_pe is shared)
//   5   the parts side by side again      dQ (B, N, h·(d_h+d_R)),  dkv = [dk_nope, dV] per head
//   3   kv = c_kv kv_b_projᵀ              dkv_b_proj = dkvᵀ c_kv,  dc_kv = dkv kv_b_proj
//   2   c_kv = RMSNorm(c) · w             RMSNorm's backward: dc, dkv_a_layernorm
//   2   [c, k_pe] = x kv_a_projᵀ          dkv_a = [dc, dk_pe]: dkv_a_proj_with_mqa, dx_kv
//   1   queries = x q_projᵀ               dq_proj = dQᵀ x,  dx_q = dQ q_proj
//   0   x is read twice                   dx = dx_q + dx_kv

#include "core/backward/mla_backward.h"

#include <algorithm>

#include "core/backward/linear_backward.h"
#include "core/forms/mla_pass.h"
#include "core/pass/describe.h"
#include "core/ops/rms_norm.h"
#include "core/position/rope.h"

namespace mha {

namespace {

// The bytes of t's elements: what a step that copies them all moves.
std::uint64_t bytes_of(const Tensor& t) { return macs_of({element_count(t.shape()), sizeof(float)}); }

// Σ_i heads[b, i, n, at : at + width] (B, N, width), heads in order: the adjoint of k_pe's
// expand to every head.
Tensor sum_heads(const Tensor& heads, std::size_t at, std::size_t width, Workspace* workspace) {
    const std::size_t B = heads.size(0), h = heads.size(1), N = heads.size(2), W = heads.size(3);
    Tensor out = new_tensor(workspace, {B, N, width});
    if (any_dry(heads, out)) return out;
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t n = 0; n < N; ++n) {
            float* sum = out.data() + (b * N + n) * width;
            for (std::size_t i = 0; i < h; ++i) {
                const float* src = heads.data() + ((b * h + i) * N + n) * W + at;
                for (std::size_t c = 0; c < width; ++c) sum[c] += src[c];
            }
        }
    return out;
}

// One projection y = x Wᵀ (MLA's have no bias) differentiated, shown: dW = dYᵀ X, dX = dY W.
LinearGrads project_back(const Tensor& x, const Tensor& w, const Tensor& dy,
                         const ProjectionNames& names, std::size_t threads, PassTrace& trace) {
    LinearGrads g = linear_backward(x.contiguous(), w, false, dy, threads);
    show_linear_grads(g, names, trace);
    return g;
}

// The gradients of what q_proj, kv_b_proj and the RoPE key wrote.
struct PartGrads {
    Tensor queries;   // (B, N, h·(d_h + d_R))
    Tensor kv;        // (B, N, h·(d_h + d_v))
    Tensor rope_key;  // (B, N, d_R)
};

// b5: the heads' gradients split into MLA's parts, RoPE rotated back on the pe parts (k_pe's
// summed over the heads first), and put side by side as q_proj and kv_b_proj wrote them.
PartGrads parts_back(const HeadGradients& hg, const MlaSizes& m, const ForwardOptions& o,
                     PassTrace& trace) {
    const std::size_t B = hg.dq.size(0), N = hg.dq.size(2), h = m.heads;
    const std::size_t d_h = m.d_nope, d_R = m.d_rope, width = d_h + d_R, kv_step = d_h + m.d_v;
    Workspace* const workspace = o.workspace;
    const auto back = [&](const std::string& x) {  // RoPE's inverse rotation, written out
        if (!o.rope) return x;
        return o.rope->layout == RopeLayout::Half
                   ? x + " * cos - rotate_half(" + x + ") * sin"
                   : "apply_rotary_emb(" + x + ", freqs_cis.conj())";
    };
    Tensor q_pe = new_uninitialised(workspace, {B, h, N, d_R});
    if (!any_dry(hg.dq, q_pe)) {
        for (std::size_t r = 0; r < B * h * N; ++r) {
            const float* src = hg.dq.data() + r * width + d_h;
            std::copy(src, src + d_R, q_pe.data() + r * d_R);
        }
    }
    if (o.rope) apply_rope(q_pe, *o.rope, 0, true);
    trace.show(q_pe, [&] {
        Step step = described(Operand::Q, StepKind::Rope, 5, "rope", "dq_pe",
                              "dq_pe = " + back("dQ[..., d_h:]"), {"B", "h", "N", "d_R"});
        step.copied_bytes = bytes_of(q_pe);
        return step;
    });
    PartGrads g;
    g.rope_key = sum_heads(hg.dk, d_h, d_R, workspace);
    trace.show(g.rope_key, [&] {
        return described(Operand::K, StepKind::AssembleHeads, 5, "sum", "dk_pe",
                         "dk_pe = dK[..., d_h:].sum(1)  (k_pe was expanded to every head)",
                         {"B", "N", "d_R"});
    });
    if (o.rope) {
        Tensor k_pe = g.rope_key.view({B, 1, N, d_R});  // shares rope_key's storage
        apply_rope(k_pe, *o.rope, 0, true);
    }
    trace.show(g.rope_key, [&] {
        return described(Operand::K, StepKind::Rope, 5, "rope", "dk_pe", "dk_pe = " + back("dk_pe"),
                         {"B", "N", "d_R"});
    });
    g.queries = new_uninitialised(workspace, {B, N, h * width});
    copy_heads(HeadsCopy::IntoRows, hg.dq, g.queries, 0, 0, width, d_h);
    copy_heads(HeadsCopy::IntoRows, q_pe, g.queries, 0, d_h, width, d_R);
    trace.show(g.queries, [&] {
        Step step = described(
            Operand::Q, StepKind::AssembleHeads, 5, "cat", "dQ",
            "dQ = cat([dQ[..., :d_h], dq_pe], -1).transpose(1, 2).reshape(B, N, h·(d_h+d_R))",
            {"B", "N", "h·(d_h+d_R)"});
        step.copied_bytes = bytes_of(g.queries);
        return step;
    });
    g.kv = new_uninitialised(workspace, {B, N, h * kv_step});
    copy_heads(HeadsCopy::IntoRows, hg.dk, g.kv, 0, 0, kv_step, d_h);
    copy_heads(HeadsCopy::IntoRows, hg.dv, g.kv, 0, d_h, kv_step, m.d_v);
    trace.show(g.kv, [&] {
        Step step = described(
            StepKind::AssembleHeads, 5, "cat", "dkv",
            "dkv = cat([dK[..., :d_h], dV], -1).transpose(1, 2).reshape(B, N, h·(d_h+d_v))",
            {"B", "N", "h·(d_h+d_v)"});
        step.copied_bytes = bytes_of(g.kv);
        return step;
    });
    return g;
}

// [a, b] along the last dimension: a (B, N, p) and b (B, N, q) -> (B, N, p + q).
Tensor cat_last(const Tensor& a, const Tensor& b, Workspace* workspace) {
    const std::size_t rows = a.size(0) * a.size(1), p = a.size(2), q = b.size(2);
    Tensor out = new_uninitialised(workspace, {a.size(0), a.size(1), p + q});
    if (any_dry(a, b, out)) return out;
    for (std::size_t r = 0; r < rows; ++r) {
        std::copy(a.data() + r * p, a.data() + (r + 1) * p, out.data() + r * (p + q));
        std::copy(b.data() + r * q, b.data() + (r + 1) * q, out.data() + r * (p + q) + p);
    }
    return out;
}

// b0: x's two paths, summed in this order: dx = dx_q + dx_kv.
Tensor input_sum(const Tensor& dx_q, const Tensor& dx_kv, Workspace* workspace) {
    Tensor sum = new_uninitialised(workspace, dx_q.shape());
    if (any_dry(dx_q, dx_kv, sum)) return sum;
    for (std::size_t e = 0; e < sum.numel(); ++e)
        sum.data()[e] = dx_q.data()[e] + dx_kv.data()[e];
    return sum;
}

}  // namespace

BackwardResult forward_backward_mla(const MlaWeights& w, const Tensor& x, const Masks& masks,
                                    const ForwardOptions& options, const Tensor& grad_output,
                                    Tracer& tracer) {
    const MlaSizes m = check_mla(w, x, masks, options);
    const Sizes s = mla_naive_sizes(m, x.size(0), x.size(1));
    check_grad_output(grad_output, s);
    Kept kept;
    MlaKept mla_kept;
    ForwardOptions o = options;
    o.keep = &kept;  // what is kept holds its workspace blocks, so none is reused under it
    PassTrace trace(tracer);
    BackwardResult r;
    r.forward = forward_mla(w, x, masks, o, trace, &mla_kept);
    trace.begin_backward();
    Weights out;
    out.w_o = w.w_o;
    const HeadGradients hg = heads_backward(out, kept, r.forward.weights, masks, s, o, grad_output,
                                            r.grads, trace);  // b14-b6
    MlaWeights& g = r.grads.mla;
    g.w_o = std::move(r.grads.params.w_o);
    r.grads.params = Weights();
    PartGrads parts = parts_back(hg, m, o, trace);  // b5
    const LinearGrads kv_b = project_back(
        mla_kept.latent, w.w_kv_b, parts.kv,
        {Operand::None, 3, "kv_b_proj", "", "dkv", "c_kv", "dc_kv", {"B", "N", "d_c"},
         {"h·(d_h+d_v)", "d_c"}},
        o.threads, trace);
    g.w_kv_b = kv_b.dw;  // b3
    Tensor d_latent = kv_b.dx;
    rms_norm_rows_backward(mla_kept.latent_raw, w.kv_norm, d_latent, g.kv_norm);  // b2
    trace.show(d_latent, [&] {
        return described(StepKind::LatentNorm, 2, "rms_norm", "dc_kv",
                         "dc_kv = (w * dc_kv - c_n * (w * dc_kv * c_n).mean(-1, keepdim=True)) / "
                         "rms(c_kv)  (w = kv_a_layernorm.weight)",
                         {"B", "N", "d_c"});
    });
    trace.show(g.kv_norm, [&] {
        return described(StepKind::WeightGrad, 2, "grad", "dkv_a_layernorm",
                         "dkv_a_layernorm = (dc_kv_n * c_n).sum((0, 1))", {"d_c"});
    });
    const Tensor d_kv_a = cat_last(d_latent, parts.rope_key, o.workspace);
    trace.show(d_kv_a, [&] {
        Step step = described(StepKind::LatentProject, 2, "cat", "dkv_a",
                              "dkv_a = cat([dc_kv, dk_pe], -1)", {"B", "N", "d_c+d_R"});
        step.copied_bytes = bytes_of(d_kv_a);
        return step;
    });
    const LinearGrads kv_a = project_back(x, w.w_kv_a, d_kv_a,
                                          {Operand::None, 2, "kv_a_proj_with_mqa", "", "dkv_a",
                                           "x", "dx_kv", model_dims, {"d_c+d_R", "d_model"}},
                                          o.threads, trace);
    g.w_kv_a = kv_a.dw;
    const LinearGrads q = project_back(
        x, w.w_q, parts.queries,
        {Operand::Q, 1, "q_proj", "", "dQ", "x", "dx_q", model_dims, {"h·(d_h+d_R)", "d_model"}},
        o.threads, trace);  // b1
    g.w_q = q.dw;
    r.grads.input = input_sum(q.dx, kv_a.dx, o.workspace);  // b0
    trace.show(r.grads.input, [&] {
        return described(StepKind::InputSum, 0, "sum", "dx", "dx = dx_q + dx_kv", model_dims);
    });
    return r;
}

}  // namespace mha
