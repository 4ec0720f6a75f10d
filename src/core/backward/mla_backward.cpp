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
#include "core/ops/rms_norm.h"
#include "core/position/rope.h"

namespace mha {

namespace {

// Σ_i heads[b, i, n, at : at + width] (B, N, width), heads in order: the adjoint of k_pe's
// expand to every head.
Tensor sum_heads(const Tensor& heads, std::size_t at, std::size_t width) {
    const std::size_t B = heads.size(0), h = heads.size(1), N = heads.size(2), W = heads.size(3);
    Tensor out({B, N, width});
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

// One projection y = x Wᵀ (no bias) differentiated, shown as planned: dW, then dX.
LinearGrads project_back(const Tensor& x, const Tensor& w, const Tensor& dy, std::size_t threads,
                         PassTrace& trace) {
    LinearGrads g = linear_backward(x.contiguous(), w, false, dy, threads);
    trace.show(g.dw);
    trace.show(g.dx);
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
    Tensor q_pe({B, h, N, d_R});
    for (std::size_t r = 0; r < B * h * N; ++r) {
        const float* src = hg.dq.data() + r * width + d_h;
        std::copy(src, src + d_R, q_pe.data() + r * d_R);
    }
    if (o.rope) apply_rope(q_pe, *o.rope, 0, true);
    trace.show(q_pe);
    PartGrads g;
    g.rope_key = sum_heads(hg.dk, d_h, d_R);
    trace.show(g.rope_key);
    if (o.rope) {
        Tensor k_pe = g.rope_key.view({B, 1, N, d_R});  // shares rope_key's storage
        apply_rope(k_pe, *o.rope, 0, true);
    }
    trace.show(g.rope_key);
    g.queries = Tensor({B, N, h * width});
    copy_heads(HeadsCopy::IntoRows, hg.dq, g.queries, 0, 0, width, d_h);
    copy_heads(HeadsCopy::IntoRows, q_pe, g.queries, 0, d_h, width, d_R);
    trace.show(g.queries);
    g.kv = Tensor({B, N, h * kv_step});
    copy_heads(HeadsCopy::IntoRows, hg.dk, g.kv, 0, 0, kv_step, d_h);
    copy_heads(HeadsCopy::IntoRows, hg.dv, g.kv, 0, d_h, kv_step, m.d_v);
    trace.show(g.kv);
    return g;
}

// [a, b] along the last dimension: a (B, N, p) and b (B, N, q) -> (B, N, p + q).
Tensor cat_last(const Tensor& a, const Tensor& b) {
    const std::size_t rows = a.size(0) * a.size(1), p = a.size(2), q = b.size(2);
    Tensor out({a.size(0), a.size(1), p + q});
    for (std::size_t r = 0; r < rows; ++r) {
        std::copy(a.data() + r * p, a.data() + (r + 1) * p, out.data() + r * (p + q));
        std::copy(b.data() + r * q, b.data() + (r + 1) * q, out.data() + r * (p + q) + p);
    }
    return out;
}

}  // namespace

BackwardResult forward_backward_mla(const MlaWeights& w, const Tensor& x, const Masks& masks,
                                    const ForwardOptions& options, const Tensor& grad_output,
                                    Tracer& tracer) {
    PassSpec spec = mla_pass_spec(w, x, masks, options);
    const MlaSizes m = *spec.mla;
    const Sizes s = spec.sizes;
    check_grad_output(grad_output, s);
    spec.backward = true;
    Kept kept;
    MlaKept mla_kept;
    ForwardOptions o = options;
    o.keep = &kept;
    o.workspace = nullptr;  // what is kept must outlive the forward
    PassTrace trace(tracer, spec);
    BackwardResult r;
    r.forward = forward_mla(w, x, masks, o, trace, &mla_kept);
    Weights out;
    out.w_o = w.w_o;
    const HeadGradients hg = heads_backward(out, kept, r.forward.weights, masks, s, o, grad_output,
                                            r.grads, trace);  // b14-b6
    MlaWeights& g = r.grads.mla;
    g.w_o = std::move(r.grads.params.w_o);
    r.grads.params = Weights();
    PartGrads parts = parts_back(hg, m, o, trace);  // b5
    const LinearGrads kv_b = project_back(mla_kept.latent, w.w_kv_b, parts.kv, o.threads, trace);
    g.w_kv_b = kv_b.dw;  // b3
    Tensor d_latent = kv_b.dx;
    rms_norm_rows_backward(mla_kept.latent_raw, w.kv_norm, d_latent, g.kv_norm);  // b2
    trace.show(d_latent);
    trace.show(g.kv_norm);
    const Tensor d_kv_a = cat_last(d_latent, parts.rope_key);
    trace.show(d_kv_a);
    const LinearGrads kv_a = project_back(x, w.w_kv_a, d_kv_a, o.threads, trace);
    g.w_kv_a = kv_a.dw;
    const LinearGrads q = project_back(x, w.w_q, parts.queries, o.threads, trace);  // b1
    g.w_q = q.dw;
    r.grads.input = Tensor(x.shape());  // b0: the two paths into x, summed in this order
    for (std::size_t e = 0; e < r.grads.input.numel(); ++e)
        r.grads.input.data()[e] = q.dx.data()[e] + kv_a.dx.data()[e];
    trace.show(r.grads.input);
    return r;
}

}  // namespace mha
