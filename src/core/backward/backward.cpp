// The backward pass of attention, each gradient beside the forward line it differentiates and
// described where it is computed (trace.show), b14 first, b0 last:
//
//   14   output = concat W_oᵀ + b_o    dW_o = dOutᵀ concat, db_o = Σ dOut, dconcat = dOut W_o
//   13   gate = σ(x_q W_gᵀ + b_g),     dg = Σ_head (dconcat ∘ O) ∘ gate ∘ (1 − gate), dW_g = dgᵀ x_q,
//        concat = O ∘ gate (--gate)    db_g = Σ dg, dx_g = dg W_g (added to dx at b0),
//                                      dO = dconcat ∘ gate
//   13-11 the heads' view              dO_h = dconcat.view(B, N, h, d_v).transpose(1, 2)
//   10   O_h = P V                     dV = Pᵀ dO_h,  dP = dO_h Vᵀ
//   9    P = softmax(S)                dS = P ∘ (dP − D),  D = rowsum(dP ∘ P) = rowsum(dO_h ∘ O_h)
//   8    S = scores + mask             dS passes (the mask is a constant; blocked: P = 0, dS = 0)
//   7    scores · f, C·tanh(· / C)     dscores = dS · (1 − tanh²) · f
//   6    Q Kᵀ                          dQ = dscores K,  dK = dscoresᵀ Q
//   5    QK-norm, RoPE                 RoPE by the opposite angle, RMSNorm's backward
//   5-4  view, transpose               the transpose back, reshape (a copy)
//   3    bias_k, bias_v, zeros         d bias_k = Σ_b dK[:, M_in], the zero row dropped
//   1-3  Q = x W_qᵀ + b_q, ...         dW_q = dQᵀ x, db_q = Σ dQ, dx_q = dQ W_q
//   0    x plays Q, K and V            dx = dx_q + dx_k + dx_v
//
// GQA: query head i read K/V head i / (h/G), so a K/V head's dK and dV are the sums of its
// query heads' (in head order). Steps 10-6 run on (batch, head) units over the threads, each
// writing only its own slices; the sums across units happen after, in a fixed order, so every
// thread count gives the same bits. On dry tensors (a dry run) nothing is computed: every
// gradient is a shape, and the steps are described all the same.

#include "core/backward/backward.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "core/backward/linear_backward.h"
#include "core/error.h"
#include "core/forms/fused_qkv.h"
#include "core/forms/kv_cache.h"
#include "core/forms/per_head.h"
#include "core/kernels/streaming_backward.h"
#include "core/kv_heads.h"
#include "core/ops/rms_norm.h"
#include "core/pass/describe.h"
#include "core/pass/flash_row.h"
#include "core/pass/score_guard.h"
#include "core/pass/score_rules.h"
#include "core/pass/shape_checks.h"
#include "core/pass/units.h"
#include "core/tensor/workspace.h"
#include "core/threads/parallel.h"

namespace mha {

namespace {

// What the backward reads of the forward, and how it runs.
struct Forwarded {
    const Weights& w;
    const Masks& masks;  // with the appended keys' columns
    const Sizes& s;      // M counts the appended positions
    const ForwardOptions& o;
    const Kept& kept;
    const Tensor& p;                 // (B, h, N, M) the attention weights P; empty when streamed
    std::optional<BlockKind> block;  // the block attention sits in, if any
    bool self;                       // one input plays query, key and value (x, not x_q)
};

// body(u) for every unit u < count, each claimed by the next free thread; each unit writes
// only its own memory.
void for_units(std::size_t count, std::uint64_t macs, std::size_t threads,
               const std::function<void(std::size_t)>& body) {
    parallel_ranges(count, count, threads_for(macs, threads),
                    [&](std::size_t begin, std::size_t end) {
                        for (std::size_t u = begin; u < end; ++u) body(u);
                    });
}

// A gradient tensor the backward writes whole: from the forward's workspace unfilled (the
// memory an earlier pass faulted in) when something writes it, else zero-filled; dry, a shape.
Tensor written_tensor(const Forwarded& f, bool dry, bool written, Shape shape) {
    if (dry) return new_dry(f.o.workspace, std::move(shape));
    return written ? new_uninitialised(f.o.workspace, std::move(shape))
                   : new_tensor(f.o.workspace, std::move(shape));
}

// The (rows, cols) row-major matrix of unit u in a contiguous (B, h, rows, cols) tensor.
MatrixView unit_matrix(const Tensor& t, std::size_t u) {
    const std::size_t rows = t.size(2), cols = t.size(3);
    return {t.data() + u * rows * cols, rows, cols, cols, 1};
}
float* unit_data(Tensor& t, std::size_t u) { return t.data() + u * t.size(2) * t.size(3); }
const float* unit_data(const Tensor& t, std::size_t u) {
    return t.data() + u * t.size(2) * t.size(3);
}

// b14's start: the gradient at attention's output, the block's when attention sits in one.
std::string grad_output_expression(const std::optional<BlockKind>& block) {
    if (!block) return "dOut = output.grad  (L = (output * dOut).sum())";
    return *block == BlockKind::Pre ? "dOut = dh  (attention's output feeds h = x + attention)"
                                    : "dOut = dsum  (attention's output feeds x + attention)";
}

// b13, gated: concat = O ∘ gate, gate = σ(x_q W_gᵀ + b_g) (B, N, h·d_v) or (B, N, h), O the
// heads' context side by side. dconcat (B, N, h·d_v) -> dO = dconcat ∘ gate; dg = Σ over each
// gate's columns of dconcat ∘ O, times σ' = gate ∘ (1 − gate); W_g's gradients and dx_g = dg W_g
// (into dx_gate, added to x_q's gradient at b0).
Tensor gate_back(const Forwarded& f, const Tensor& dconcat, Gradients& g, Tensor& dx_gate,
                 PassTrace& trace) {
    const Tensor& gate = f.kept.gate;
    const Tensor& context = f.kept.context;  // (B, h, N, d_v), any strides
    const std::size_t B = f.s.batch, N = f.s.seq_len, h = f.s.heads, d_v = f.s.d_v();
    const std::size_t W = h * d_v, rows = gate.size(2);
    const bool dry = any_dry(dconcat, gate, context);
    Tensor dg = written_tensor(f, dry, true, gate.shape());
    Tensor d_in = written_tensor(f, dry, true, dconcat.shape());
    for (std::size_t b = 0; b < B && !dry; ++b) {
        const Strides& st = context.strides();
        for (std::size_t n = 0; n < N; ++n) {
            const std::size_t r = b * N + n;
            const float* dc = dconcat.data() + r * W;
            const float* gt = gate.data() + r * rows;
            float* dgr = dg.data() + r * rows;
            std::fill(dgr, dgr + rows, 0.0f);
            for (std::size_t e = 0; e < W; ++e) {  // e = i·d_v + d
                const std::size_t i = e / d_v, j = rows == W ? e : i;
                const float o = context.data()[b * st[0] + i * st[1] + n * st[2] + (e % d_v) * st[3]];
                dgr[j] += dc[e] * o;
                d_in.data()[r * W + e] = dc[e] * gt[j];
            }
            for (std::size_t j = 0; j < rows; ++j) dgr[j] *= gt[j] * (1.0f - gt[j]);
        }
    }
    const bool headwise = rows != W;
    const std::string c = concat_width_name(f.s), width = headwise ? "h" : c;
    const std::string o = "context.transpose(1, 2).reshape(B, N, " + c + ")";
    trace.show(dg, [&] {
        return described(StepKind::Gate, 13, "grad", "dg",
                         headwise ? "dg = (dconcat * " + o +
                                        ").view(B, N, h, d_k).sum(-1) * gate * (1 - gate)"
                                  : "dg = dconcat * " + o + " * gate * (1 - gate)",
                         {"B", "N", width}, macs_of({B, N, W}));
    });
    const std::string x = f.block == BlockKind::Pre ? "x_norm" : query_name(f.self);
    const LinearGrads lg =
        linear_backward(f.kept.x_q.contiguous(), f.w.w_g, !f.w.b_g.empty(), dg, f.o.threads,
                        f.o.workspace);
    show_linear_grads(lg, {Operand::None, 13, "W_g", "b_g", "dg", x, "dx_g", model_dims,
                           {width, "d_model"}}, trace);
    g.params.w_g = lg.dw;
    g.params.b_g = lg.db;
    dx_gate = lg.dx;
    trace.show(d_in, [&] {
        return described(StepKind::Gate, 13, "grad", "dconcat",
                         gated_expression("dconcat", headwise, c),
                         {"B", "N", c}, macs_of({B, N, W}));
    });
    return d_in;
}

// b14-b11: W_o's gradients (and the gate's, b13), then dconcat seen as each head's dO_h
// (B, h, N, d_v), a view.
Tensor output_back(const Forwarded& f, const Tensor& d_out, Gradients& g, Tensor& dx_gate,
                   PassTrace& trace) {
    const Sizes& s = f.s;
    trace.show(d_out, [&] {
        return described(StepKind::GradOutput, 14, "grad", "dOut", grad_output_expression(f.block),
                         model_dims);
    });
    const LinearGrads o = linear_backward(f.kept.concat, f.w.w_o, !f.w.b_o.empty(), d_out,
                                          f.o.threads, f.o.workspace);
    const std::string width = concat_width_name(s), dv = v_dim_name(s);
    show_linear_grads(o,
                      {Operand::None,
                       14,
                       "W_o",
                       "b_o",
                       "dOut",
                       "concat",
                       "dconcat",
                       {"B", "N", width},
                       {"d_model", width}},
                      trace);
    g.params.w_o = o.dw;
    g.params.b_o = o.db;
    const Tensor dconcat = f.w.gated() ? gate_back(f, o.dx, g, dx_gate, trace) : o.dx;  // b13
    const Tensor split = dconcat.view({s.batch, s.seq_len, s.heads, s.d_v()});
    trace.show(split, [&] {
        return described(StepKind::SplitHeads, 13, "view", "dconcat",
                         "dconcat.view(B, N, h, " + dv + ")", {"B", "N", "h", dv});
    });
    Tensor d_heads = split.transpose(1, 2);
    if (f.o.ablate_head) zero_head(d_heads, *f.o.ablate_head);  // its context was zeroed
    trace.show(d_heads, [&] {
        return described(StepKind::MergeHeads, 11, "transpose", "dO_h",
                         "dO_h = dconcat.transpose(1, 2)", {"B", "h", "N", dv});
    });
    return d_heads;
}

// (B, h, M, w) per query head -> (B, G, M, w): each K/V head's the sum of its query heads',
// in head order (the adjoint of K.repeat_interleave(h / G, dim=1)), shown as step `number`;
// itself when G = h.
Tensor group_sum(const Forwarded& f, const Tensor& per_head, Operand operand, int number,
                 const std::string& name, const std::string& width, PassTrace& trace) {
    const Sizes& s = f.s;
    const std::size_t h = s.heads, G = s.kv_heads, r = h / G;
    if (G == h) return per_head;
    const std::size_t B = per_head.size(0), L = per_head.size(2), w = per_head.size(3);
    Tensor out = written_tensor(f, per_head.dry(), true, {B, G, L, w});
    const std::size_t size = L * w;
    for_units(out.dry() ? 0 : B * G, std::uint64_t(B) * h * size, f.o.threads, [&](std::size_t u) {
        const std::size_t b = u / G, g = u % G;
        float* sum = out.data() + u * size;
        const float* first = per_head.data() + (b * h + g * r) * size;
        std::copy(first, first + size, sum);
        for (std::size_t j = 1; j < r; ++j) {
            const float* head = first + j * size;
            for (std::size_t e = 0; e < size; ++e) sum[e] += head[e];
        }
    });
    trace.show(out, [&] {
        Step step = described(operand, StepKind::GroupSum, number, "sum", name,
                              name + " = " + name + ".view(B, G, h/G, M, " + width + ").sum(2)",
                              {"B", "G", "M", width});
        step.facts.summed_heads = r;
        return step;
    });
    return out;
}

// The per-query-head gradients of b10-b6.
struct HeadGrads {
    Tensor dv;  // (B, h, M, d_v), then (B, G, M, d_v)
    Tensor ds;  // (B, h, N, M): dP, then dS, then dscores, in place
    Tensor d;   // (B, h, N)
    Tensor dq;  // (B, h, N, d_k)
    Tensor dk;  // (B, h, M, d_k), then (B, G, M, d_k)
};

// Step 7's soft-capped scores, C·tanh(scores · f / C), recomputed by the forward's own units.
Tensor capped_scores(const Forwarded& f, const UnitMath& math) {
    const Sizes& s = f.s;
    Tensor scores = new_uninitialised(f.o.workspace, {s.batch, s.heads, s.seq_len, s.kv_len});
    const Units units{s.batch * s.heads, [&](std::size_t u) {
                          const std::size_t b = u / s.heads, i = u % s.heads;
                          const std::size_t g = kv_head_of(i, s.heads, s.kv_heads);
                          return AttentionUnit{head_matrix(f.kept.q, b, i),
                                               head_matrix(f.kept.k, b, g),
                                               head_matrix(f.kept.v, b, g),
                                               unit_mask(f.masks, b, i, s),
                                               unit_data(scores, u),
                                               nullptr,
                                               0,
                                               b,
                                               i};
                      }};
    run_units(UnitStep::Scores, units, math, f.o.threads);
    run_units(UnitStep::Scale, units, math, f.o.threads);
    return scores;
}

// b7: dscores = dS · (1 − tanh²) · f in place, tanh = capped / C; dS · f without a soft-cap.
void scale_back(const Forwarded& f, Tensor& ds) {
    const UnitMath math = unit_math(f.s, f.o);
    const double cap = f.masks.softcap;
    const std::size_t count = ds.numel();
    if (ds.dry()) return;
    if (cap <= 0.0) {
        if (math.factor == 1.0f) return;
        for (std::size_t e = 0; e < count; ++e) ds.data()[e] *= math.factor;
        return;
    }
    const Tensor capped = capped_scores(f, math);
    for (std::size_t e = 0; e < count; ++e) {
        const double t = double(capped.data()[e]) / cap;
        ds.data()[e] = float(double(ds.data()[e]) * (1.0 - t * t) * double(math.factor));
    }
}

// Σ a_j b_j in double, in 8 lanes (lane l takes j = l, l + 8, ...; the last partial group into
// the first lanes), then lanes 0 to 7: every product is exact in double, and the lanes let the
// compiler use vectors without reordering any sum, so every kernel variant gives these bits.
// A row's sum is the same whether or not zeros follow its last key.
double lane_dot(const float* a, const float* b, std::size_t n) {
    constexpr std::size_t lanes = 8;
    double lane[lanes] = {};
    std::size_t j = 0;
    for (; j + lanes <= n; j += lanes) {
        for (std::size_t l = 0; l < lanes; ++l) lane[l] += double(a[j + l]) * double(b[j + l]);
    }
    for (std::size_t l = 0; j < n; ++j, ++l) lane[l] += double(a[j]) * double(b[j]);
    double sum = lane[0];
    for (std::size_t l = 1; l < lanes; ++l) sum += lane[l];
    return sum;
}

// Unit u of b10-b6 streamed: attend_backward_streaming from Q, K, V, O, lse and dO_h. A unit
// the forward scored as (q·factor) kᵀ (scores beyond float32) is recomputed the same way; its
// dQ, the gradient of q·factor, is then scaled by factor.
void attend_back_unit(const Forwarded& f, const MatrixView& d_o, std::size_t u, HeadGrads& g) {
    const Sizes& s = f.s;
    const std::size_t b = u / s.heads, i = u % s.heads, kv = kv_head_of(i, s.heads, s.kv_heads);
    const std::size_t N = s.seq_len, d_k = s.d_k(), d_v = s.d_v();
    const UnitMath math = unit_math(s, f.o);
    AttentionUnit unit{head_matrix(f.kept.q, b, i),
                       head_matrix(f.kept.k, b, kv),
                       head_matrix(f.kept.v, b, kv),
                       unit_mask(f.masks, b, i, s),
                       nullptr,
                       nullptr,
                       0,
                       b,
                       i};
    std::vector<float> scaled;
    const bool prescaled = needs_prescale(unit, math.factor);
    if (prescaled) unit = with_scaled_q(unit, math.factor, scaled);
    float* dq = unit_data(g.dq, u);
    attend_backward_streaming(unit.q, unit.k, unit.v, unit.mask, prescaled ? 1.0f : math.factor,
                              math.zero_masked_rows,
                              {head_matrix(f.kept.context, b, i), f.kept.lse.data() + u * N}, d_o,
                              {dq, d_k, unit_data(g.dk, u), d_k, unit_data(g.dv, u), d_v});
    for (std::size_t e = 0; prescaled && e < N * d_k; ++e) dq[e] *= math.factor;
}

// b10-b6 streamed (FlashAttention-2's backward): per unit, P recomputed tile by tile from the
// row log-sum-exp the forward kept; dQ, dK, dV per query head, then the GQA group sums.
HeadGrads attend_back_streamed(const Forwarded& f, const Tensor& d_heads, PassTrace& trace) {
    const Sizes& s = f.s;
    const std::size_t B = s.batch, N = s.seq_len, M = s.kv_len, h = s.heads;
    const std::size_t d_k = s.d_k(), d_v = s.d_v();
    const bool dry = any_dry(d_heads, f.kept.q, f.kept.lse);
    const std::size_t units = N == 0 || M == 0 || dry ? 0 : B * h;
    HeadGrads g{written_tensor(f, dry, units > 0, {B, h, M, d_v}), Tensor(), Tensor(),
                written_tensor(f, dry, units > 0, {B, h, N, d_k}),
                written_tensor(f, dry, units > 0, {B, h, M, d_k})};
    const std::uint64_t macs = std::uint64_t(units) * N * M * (2 * d_k + 3 * d_v);
    for_units(units, macs, f.o.threads, [&](std::size_t u) {
        attend_back_unit(f, head_matrix(d_heads, u / h, u % h), u, g);
    });
    const std::string dv = v_dim_name(s);
    trace.show(g.dq, [&] {
        Step step =
            described(Operand::Q, StepKind::AttendGrad, 10, "attend-grad", "dQ",
                      "dQ, dK, dV = flash_attention_backward(Q, K, V, O_h, lse, dO_h)  (per tile: "
                      "P = exp(scores - lse), dS = P * (dP - D); S and dP recomputed)",
                      {"B", "h", "N", "d_k"},
                      macs_of({B, h, N, M, 2 * d_k + d_v}));  // S = Q Kᵀ, dP = dO_h Vᵀ, dQ = dS K
        if (f.o.flash_row && units > 0) {                     // batch 0, head 0, one row retraced
            step.facts.flash_back = flash_back_facts(
                head_matrix(f.kept.q, 0, 0), head_matrix(f.kept.k, 0, 0),
                head_matrix(f.kept.v, 0, 0), unit_mask(f.masks, 0, 0, s), unit_math(s, f.o).factor,
                {head_matrix(f.kept.context, 0, 0), f.kept.lse.data()}, head_matrix(d_heads, 0, 0),
                *f.o.flash_row, 0);
        }
        return step;
    });
    trace.show(g.dk, [&] {
        return described(Operand::K, StepKind::AttendGrad, 10, "attend-grad", "dK",
                         "dK  (the same pass: dK += dS.T @ Q per tile)", {"B", "h", "M", "d_k"},
                         macs_of({B, h, N, M, d_k}));
    });
    trace.show(g.dv, [&] {
        return described(Operand::V, StepKind::AttendGrad, 10, "attend-grad", "dV",
                         "dV  (the same pass: dV += P.T @ dO_h per tile)", {"B", "h", "M", dv},
                         macs_of({B, h, N, M, d_v}));
    });
    g.dk = group_sum(f, g.dk, Operand::K, 6, "dK", "d_k", trace);
    g.dv = group_sum(f, g.dv, Operand::V, 10, "dV", dv, trace);
    return g;
}

// b10-b6 on the standard path, on (batch, head) units over the threads, each writing only its
// own slices of dV, dS, D, dQ and dK; the GQA group sums after, in order. Untraced (and not
// soft-capped), each unit runs b10-b6 at once, b7's scale folded into dS.
HeadGrads attend_back(const Forwarded& f, const Tensor& d_heads, PassTrace& trace) {
    const Sizes& s = f.s;
    const std::size_t B = s.batch, N = s.seq_len, M = s.kv_len, h = s.heads, G = s.kv_heads;
    const std::size_t d_k = s.d_k(), d_v = s.d_v(), threads = f.o.threads;
    const bool dry = any_dry(d_heads, f.p, f.kept.q);
    const std::size_t units = N == 0 || M == 0 || dry ? 0 : B * h;
    const bool written = units > 0;
    HeadGrads g{written_tensor(f, dry, written, {B, h, M, d_v}),
                written_tensor(f, dry, written, {B, h, N, M}),
                written_tensor(f, dry, written, {B, h, N}),
                written_tensor(f, dry, written, {B, h, N, d_k}),
                written_tensor(f, dry, written, {B, h, M, d_k})};
    const std::uint64_t grid = std::uint64_t(units) * N * M;
    const auto kv = [&](std::size_t u) { return kv_head_of(u % h, h, G); };
    const auto dO = [&](std::size_t u) { return head_matrix(d_heads, u / h, u % h); };
    const bool fused = !trace.on() && f.masks.softcap <= 0.0;
    const float factor = unit_math(s, f.o).factor;
    const Normaliser& normaliser = normaliser_of(f.masks);

    // The causal rule's zero weights are left out of the products that read P or dS; fused,
    // dP is not computed for blocked keys either, where dS is written 0 (P = 0 made it ±0,
    // which adds nothing to dQ and dK): the same bits.
    const auto skip = [&](std::size_t u, GemmSkip::Kind kind) {
        return causal_skip(unit_mask(f.masks, u / h, u % h, s), kind);
    };
    const auto dv_of = [&](std::size_t u) {  // b10: dV = Pᵀ dO_h
        gemm(unit_matrix(f.p, u).transposed(), dO(u), unit_data(g.dv, u), d_v, false,
             skip(u, GemmSkip::RowStarts));
    };
    const auto dp_of = [&](std::size_t u) {  // b10: dP = dO_h Vᵀ
        gemm(dO(u), head_matrix(f.kept.v, u / h, kv(u)).transposed(), unit_data(g.ds, u), M, false,
             fused ? skip(u, GemmSkip::OutputEnds) : GemmSkip{});
    };
    // Unit u's row ends of dP: fused, dP is not computed past a causal row's last key, where
    // P = 0 adds nothing to D and dS is 0: the same bits as the whole rows.
    const auto dp_ends = [&](std::size_t u) {
        const HeadMask mask = unit_mask(f.masks, u / h, u % h, s);
        const bool skipped =
            fused && causal_skip(mask, GemmSkip::OutputEnds).kind != GemmSkip::None;
        return [mask, skipped, M](std::size_t n) { return skipped ? mask.key_end(n) : M; };
    };
    // b9: D = rowsum(dP ∘ P), from P itself: exact where P is nearly one-hot, where
    // rowsum(dO_h ∘ O_h) cancels (the streaming path, which has no P, reads that form).
    const auto d_of = [&](std::size_t u) {
        const float *p = unit_data(f.p, u), *dp = unit_data(g.ds, u);
        const auto end_of = dp_ends(u);
        for (std::size_t n = 0; n < N; ++n) {
            const std::size_t end = end_of(n);
            g.d.data()[u * N + n] = float(lane_dot(dp + n * M, p + n * M, end));
        }
    };
    // The note's check of the identity D = rowsum(dO_h ∘ O_h), since O_h = P V: the largest
    // difference over the rows with numbers (a fully blocked row is NaN).
    const auto identity_difference = [&] {
        double worst = 0.0;
        for (std::size_t u = 0; u < units; ++u) {
            const MatrixView o = head_matrix(f.kept.context, u / h, u % h), d_o = dO(u);
            for (std::size_t n = 0; n < N; ++n) {
                double sum = 0.0;
                for (std::size_t c = 0; c < d_v; ++c) sum += double(d_o(n, c)) * o(n, c);
                const double difference = std::abs(sum - double(g.d.data()[u * N + n]));
                if (!std::isnan(difference)) worst = std::max(worst, difference);
            }
        }
        return worst;
    };
    const auto ds_of = [&](std::size_t u) {  // b9 by the normaliser: softmax's P ∘ (dP − D)
        const float* p = unit_data(f.p, u);
        float* ds = unit_data(g.ds, u);
        const auto end_of = dp_ends(u);
        for (std::size_t n = 0; n < N; ++n) {
            const float d = normaliser.row_dot ? g.d.data()[u * N + n] : 0.0f;
            float* row = ds + n * M;
            const std::size_t end = end_of(n);
            normaliser.backward_row(p + n * M, row, end, d);
            std::fill(row + end, row + M, 0.0f);
            if (fused) {  // then b7's · f
                for (std::size_t j = 0; j < end; ++j) row[j] *= factor;
            }
        }
    };
    const auto dq_of = [&](std::size_t u) {  // b6: dQ = dscores K
        gemm(unit_matrix(g.ds, u), head_matrix(f.kept.k, u / h, kv(u)), unit_data(g.dq, u), d_k,
             false, skip(u, GemmSkip::RowEnds));
    };
    const auto dk_of = [&](std::size_t u) {  // b6: dK = dscoresᵀ Q
        gemm(unit_matrix(g.ds, u).transposed(), head_matrix(f.kept.q, u / h, u % h),
             unit_data(g.dk, u), d_k, false, skip(u, GemmSkip::RowStarts));
    };
    const std::string dv = v_dim_name(s);
    if (fused) {
        for_units(units, grid * (2 * d_v + 2 * d_k), threads, [&](std::size_t u) {
            dv_of(u);
            dp_of(u);
            if (normaliser.row_dot) d_of(u);
            ds_of(u);
            dq_of(u);
            dk_of(u);
        });
        g.dv = group_sum(f, g.dv, Operand::V, 10, "dV", dv, trace);
        g.dk = group_sum(f, g.dk, Operand::K, 6, "dK", "d_k", trace);
        return g;
    }
    const Dims dims = {"B", "h", "N", "M"};
    for_units(units, grid * d_v, threads, dv_of);
    trace.show(g.dv, [&] {
        return described(Operand::V, StepKind::ValueGrad, 10, "grad", "dV",
                         "dV = P.transpose(-2, -1) @ dO_h", {"B", "h", "M", dv},
                         macs_of({B, h, N, M, d_v}));
    });
    g.dv = group_sum(f, g.dv, Operand::V, 10, "dV", dv, trace);
    for_units(units, grid * d_v, threads, dp_of);
    trace.show(g.ds, [&] {
        return described(StepKind::WeightsGrad, 10, "grad", "dP", "dP = dO_h @ V.transpose(-2, -1)",
                         dims, macs_of({B, h, N, M, d_v}));
    });
    if (normaliser.row_dot) {
        for_units(units, grid, threads, d_of);
        trace.show(g.d, [&] {
            Step step = described(StepKind::RowDot, 9, "grad", "D", "D = (dP * P).sum(-1)",
                                  {"B", "h", "N"}, macs_of({B, h, N, M}));
            if (!dry) step.facts.row_dot_difference = identity_difference();
            return step;
        });
    }
    for_units(units, grid, threads, ds_of);
    trace.show(g.ds, [&] {
        Step step = described(StepKind::SoftmaxGrad, 9, "grad", "dS", normaliser.backward, dims,
                              macs_of({B, h, N, M}));
        step.facts.normaliser = &normaliser;
        return step;
    });
    trace.show(g.ds, [&] {  // b8: the mask added constants; where it blocked, P = 0 made dS = 0
        const Masks& m = f.masks;
        const bool blocks = m.has_attn_mask() || m.has_key_padding() || m.causal || m.window > 0;
        Step step =
            described(StepKind::MaskGrad, 8, "grad", "dS",
                      blocks ? "dS  (the mask is a constant; blocked keys: P = 0, so dS = 0)"
                             : "dS  (the mask is a constant: unchanged)",
                      dims);
        step.facts.blocked_zero_gradient = blocks;
        return step;
    });
    scale_back(f, g.ds);
    trace.show(g.ds, [&] {  // b7
        const double cap = f.masks.softcap;
        std::string expression = "dscores = dS";
        if (cap > 0) expression += " * (1 - torch.tanh(scores / softcap)**2)";
        if (f.o.scale) {
            expression +=
                f.o.scale_base > 0 ? " / math.sqrt(query_pre_attn_scalar)" : " / math.sqrt(d_k)";
        }
        Step step = described(StepKind::ScaleGrad, 7, "grad", "dscores", expression, dims,
                              cap > 0 ? macs_of({B, h, N, M}) : 0);
        if (f.o.scale) step.facts.scale_factor = factor;
        if (cap > 0) step.facts.softcap = cap;
        return step;
    });
    for_units(units, grid * d_k, threads, dq_of);
    trace.show(g.dq, [&] {
        return described(Operand::Q, StepKind::QueryGrad, 6, "grad", "dQ", "dQ = dscores @ K",
                         {"B", "h", "N", "d_k"}, macs_of({B, h, N, M, d_k}));
    });
    for_units(units, grid * d_k, threads, dk_of);
    trace.show(g.dk, [&] {
        return described(Operand::K, StepKind::KeyGrad, 6, "grad", "dK",
                         "dK = dscores.transpose(-2, -1) @ Q", {"B", "h", "M", "d_k"},
                         macs_of({B, h, N, M, d_k}));
    });
    g.dk = group_sum(f, g.dk, Operand::K, 6, "dK", "d_k", trace);
    return g;
}

// b5: RoPE rotated back by the opposite angle, then QK-norm's backward; in place.
void position_back(const Forwarded& f, Tensor& dq, Tensor& dk, Gradients& g, PassTrace& trace) {
    const Dims q_dims = {"B", "h", "N", "d_k"},
               k_dims = {"B", f.s.kv_heads == f.s.heads ? "h" : "G", "M", "d_k"};
    if (f.o.rope) {
        const bool half = f.o.rope->layout == RopeLayout::Half;
        const auto back = [&](const Tensor& d, Operand operand, const std::string& x,
                              const Dims& dims) {
            trace.show(d, [&] {
                return described(operand, StepKind::Rope, 5, "rope", x,
                                 half ? x + " = " + x + " * cos - rotate_half(" + x + ") * sin"
                                      : x + " = apply_rotary_emb(" + x + ", freqs_cis.conj())",
                                 dims);
            });
        };
        apply_rope(dq, *f.o.rope, f.s.kv_len - f.s.seq_len, true);
        back(dq, Operand::Q, "dQ", q_dims);
        apply_rope(dk, *f.o.rope, 0, true);
        back(dk, Operand::K, "dK", k_dims);
    }
    if (f.w.q_norm.empty()) return;
    for (const auto& [x, raw, norm, d, d_norm, operand, dims] :
         {std::tuple("Q", &f.kept.q_raw, &f.w.q_norm, &dq, &g.params.q_norm, Operand::Q, &q_dims),
          std::tuple("K", &f.kept.k_raw, &f.w.k_norm, &dk, &g.params.k_norm, Operand::K,
                     &k_dims)}) {
        rms_norm_rows_backward(*raw, *norm, *d, *d_norm);
        const std::string X = x, name = X == "Q" ? "q_norm" : "k_norm";
        trace.show(*d, [&, operand = operand, dims = dims] {
            return described(operand, StepKind::QkNorm, 5, "qk-norm", "d" + X,
                             "d" + X + " = (" + name + " * d" + X + " - " + X + "_n * (" + name +
                                 " * d" + X + " * " + X + "_n).mean(-1, keepdim=True)) / rms(" + X +
                                 ")",
                             *dims);
        });
        trace.show(*d_norm, [&, operand = operand] {
            return described(operand, StepKind::WeightGrad, 5, "grad", "d" + name,
                             "d" + name + " = (d" + X + "_n * " + X + "_n).sum((0, 1, 2))",
                             {"d_k"});
        });
    }
}

// b5: d (B, H, L, w) -> transposed (B, L, H, w), a view named `name`, its dims length and
// heads.
Tensor heads_moved(const Tensor& d, Operand operand, const std::string& name,
                   const std::string& length, const std::string& heads, PassTrace& trace) {
    const Tensor moved = d.transpose(1, 2);
    trace.show(moved, [&] {
        return described(operand, StepKind::MoveHeads, 5, "transpose", name,
                         name + ".transpose(1, 2)", {"B", length, heads, "d_k"});
    });
    return moved;
}

// b4: moved (B, L, H, w) -> reshaped (B, L, H·w), a copy; flat names H·w.
Tensor heads_joined(const Tensor& moved, Operand operand, const std::string& name,
                    const std::string& length, const std::string& flat, PassTrace& trace) {
    const Tensor joined =
        moved.contiguous().view({moved.size(0), moved.size(1), moved.size(2) * moved.size(3)});
    trace.show(joined, [&] {
        Step step = described(
            operand, StepKind::SplitHeads, 4, "reshape", name,
            name + " = " + name + ".transpose(1, 2).reshape(B, " + length + ", " + flat + ")",
            {"B", length, flat});
        step.copied_bytes = copy_bytes(moved);
        return step;
    });
    return joined;
}

// b3: d (B, M, W) -> its first M_in rows (B, M_in, W), a copy; d bias (W) = Σ_b d[b, M_in]
// when bias_kv appended a row there (the zero row of add_zero_attn is dropped). x: K or V.
Tensor append_back(const Forwarded& f, const Tensor& d, const std::string& x, Tensor& d_bias,
                   PassTrace& trace) {
    const std::size_t B = d.size(0), M = d.size(1), W = d.size(2);
    const AppendedKv appended = appended_kv(f.w, f.o);
    const std::size_t M_in = M - appended.count();
    const Operand operand = x == "K" ? Operand::K : Operand::V;
    const std::string width = f.s.kv_heads == f.s.heads ? "d_model" : "G·d_k";
    if (appended.bias_kv) {
        const std::string bias = x == "K" ? "bias_k" : "bias_v";
        d_bias = written_tensor(f, d.dry(), true, {W});
        if (!d.dry()) {
            std::vector<double> sum(W, 0.0);
            for (std::size_t b = 0; b < B; ++b) {
                for (std::size_t c = 0; c < W; ++c) sum[c] += d.data()[(b * M + M_in) * W + c];
            }
            std::copy(sum.begin(), sum.end(), d_bias.data());
        }
        trace.show(d_bias, [&] {
            return described(operand, StepKind::AppendGrad, 3, "grad", "d" + bias,
                             "d" + bias + " = d" + x + "[:, " + std::to_string(M_in) + "].sum(0)",
                             {width});
        });
    }
    const Tensor own = sequence_rows(d, 0, M_in, f.o.workspace);  // (B, M_in, W)
    trace.show(own, [&] {
        Step step = described(operand, StepKind::AppendGrad, 3, "slice", "d" + x,
                              "d" + x + " = d" + x + "[:, :" + std::to_string(M_in) + "]",
                              {"B", "M", width});
        step.copied_bytes = macs_of({B, M_in, W, sizeof(float)});
        step.facts.appended = AppendedFacts{M_in, M, appended.bias_kv, appended.zero_attn};
        return step;
    });
    return own;
}

// Per-head: the rows dW[i] (d_k, in) of each head's slice of dW (heads·d_k, in), views.
void show_head_rows(const Tensor& dw, std::size_t d_k, const ProjectionNames& n, PassTrace& trace) {
    const std::size_t heads = dw.size(0) / d_k;
    const Tensor rows = dw.view({heads, d_k, dw.size(1)});
    for (std::size_t i = 0; i < heads; ++i) {
        trace.show(rows.select(0, i), [&] {
            const std::string id = std::to_string(i), range = "[" + std::to_string(i * d_k) + ":" +
                                                              std::to_string((i + 1) * d_k) + "]";
            return described(n.operand, StepKind::WeightGrad, n.number, "grad", "d" + n.w + range,
                             "d" + n.w + range + " = " + n.dy + "_" + id + ".T @ " + n.x +
                                 "  (head " + id + "'s rows)",
                             {"d_k", n.w_dims.back()});
        });
    }
}

// b5-b0 of the packed form, in descending step order (and of the per-head form, which adds each head's rows of dW).
void packed_back(const Forwarded& f, const Inputs& in, bool per_head, HeadGrads& hg, Gradients& g,
                 PassTrace& trace) {
    const Sizes& s = f.s;
    const bool self = in.self_attention();
    const std::string g_heads = s.kv_heads == s.heads ? "h" : "G",
                      kv_width = s.kv_heads == s.heads ? "d_model" : "G·d_k",
                      q_width = q_width_name(s);
    // b5 for Q, K and V, then b4 for each, so the step numbers only count down
    const Tensor mq = heads_moved(hg.dq, Operand::Q, "dQ", "N", "h", trace);
    const Tensor mk = heads_moved(hg.dk, Operand::K, "dK", "M", g_heads, trace);
    const Tensor mv = heads_moved(hg.dv, Operand::V, "dV", "M", g_heads, trace);
    const Tensor dq = heads_joined(mq, Operand::Q, "dQ", "N", q_width, trace);
    Tensor dk = heads_joined(mk, Operand::K, "dK", "M", kv_width, trace);
    Tensor dv = heads_joined(mv, Operand::V, "dV", "M", kv_width, trace);
    if (appended_kv(f.w, f.o).count() > 0) {
        dk = append_back(f, dk, "K", g.params.bias_k, trace);
        dv = append_back(f, dv, "V", g.params.bias_v, trace);
    }
    // the three projections' products in one call over the threads, then shown in order
    const Tensor x_q = in.x_q.contiguous(), x_k = in.x_k.contiguous(), x_v = in.x_v.contiguous();
    const std::vector<LinearGrads> qkv = linear_backward({{x_q, f.w.w_q, !f.w.b_q.empty(), dq},
                                                          {x_k, f.w.w_k, !f.w.b_k.empty(), dk},
                                                          {x_v, f.w.w_v, !f.w.b_v.empty(), dv}},
                                                         f.o.threads, f.o.workspace);
    const std::string x = f.block == BlockKind::Pre ? "x_norm" : query_name(self);
    const auto width = [&](std::size_t w, const char* own) {
        return w == s.d_model ? "d_model" : own;
    };
    const std::string kdim = width(s.kdim, "kdim"), vdim = width(s.vdim, "vdim");
    const ProjectionNames names[] = {
        {Operand::Q, 1, "W_q", "b_q", "dQ", x, "dx_q", model_dims, {q_width, "d_model"}},
        {Operand::K,
         2,
         "W_k",
         "b_k",
         "dK",
         self ? x : "x_k",
         "dx_k",
         {"B", "M", kdim},
         {kv_width, kdim}},
        {Operand::V,
         3,
         "W_v",
         "b_v",
         "dV",
         self ? x : "x_v",
         "dx_v",
         {"B", "M", vdim},
         {kv_width, vdim}}};
    for (std::size_t i = 3; i-- > 0;) {  // b3 (V), b2 (K), b1 (Q): counting down
        show_linear_grads(qkv[i], names[i], trace);
        if (per_head) show_head_rows(qkv[i].dw, s.d_k(), names[i], trace);
    }
    const LinearGrads &q = qkv[0], &k = qkv[1], &v = qkv[2];
    g.params.w_q = q.dw;
    g.params.b_q = q.db;
    g.params.w_k = k.dw;
    g.params.b_k = k.db;
    g.params.w_v = v.dw;
    g.params.b_v = v.db;
    if (!self) {
        g.input = q.dx;
        g.key = k.dx;
        g.value = v.dx;
        return;
    }
    const bool dry = any_dry(q.dx, k.dx, v.dx);
    g.input = written_tensor(f, dry, true, q.dx.shape());  // b0: x's three paths, summed
    for (std::size_t e = 0, n = dry ? 0 : g.input.numel(); e < n; ++e)  // in this order
        g.input.data()[e] = q.dx.data()[e] + k.dx.data()[e] + v.dx.data()[e];
    trace.show(g.input, [&] {
        return described(StepKind::InputSum, 0, "sum", "d" + x, "d" + x + " = dx_q + dx_k + dx_v",
                         model_dims);
    });
}

// b0, gated: the gate's path from x_q added to x_q's gradient (x's, for self-attention).
void add_gate_input(const Forwarded& f, const Tensor& dx_gate, Gradients& g, PassTrace& trace) {
    const bool dry = any_dry(g.input, dx_gate);
    for (std::size_t e = 0, n = dry ? 0 : g.input.numel(); e < n; ++e)
        g.input.data()[e] += dx_gate.data()[e];
    const std::string x = f.block == BlockKind::Pre ? "x_norm" : query_name(f.self);
    trace.show(g.input, [&] {
        return described(StepKind::InputSum, 0, "sum", "d" + x, "d" + x + " = d" + x + " + dx_g",
                         model_dims);
    });
}

// Part i (0, 1, 2: Q, K, V) of a gradient stacked as Q's, K's and V's rows, a view; empty
// where the weight has none.
Tensor third(const Tensor& weight, const Tensor& grad, std::size_t i) {
    if (weight.empty()) return Tensor();
    Shape shape = grad.shape();
    shape[0] /= 3;
    shape.insert(shape.begin(), 3);
    return grad.view(shape).select(0, i);
}

// b5-b1 of the fused form: dQ, dK, dV stacked as dqkv (3, B, h, N, d_k), permuted back, W_qkv.
void fused_back(const Forwarded& f, const Inputs& in, HeadGrads& hg, Gradients& g,
                PassTrace& trace) {
    const Sizes& s = f.s;
    const std::size_t B = s.batch, N = s.seq_len, h = s.heads, d_k = s.d_k();
    const bool dry = any_dry(hg.dq, hg.dk, hg.dv);
    Tensor stacked = written_tensor(f, dry, true, {3, B, h, N, d_k});
    const std::size_t part = B * h * N * d_k;
    for (std::size_t i = 0; i < 3 && !dry; ++i) {
        const Tensor& d = i == 0 ? hg.dq : i == 1 ? hg.dk : hg.dv;
        std::copy(d.data(), d.data() + part, stacked.data() + i * part);
    }
    trace.show(stacked, [&] {
        Step step = described(Operand::Qkv, StepKind::Unbind, 5, "stack", "dqkv",
                              "dqkv = torch.stack([dQ, dK, dV])", {"qkv", "B", "h", "N", "d_k"});
        step.copied_bytes = macs_of({3, B, h, N, d_k, sizeof(float)});
        return step;
    });
    const Tensor moved = stacked.permute({1, 3, 0, 2, 4});
    trace.show(moved, [&] {
        return described(Operand::Qkv, StepKind::MoveHeads, 5, "permute", "dqkv",
                         "dqkv.permute(1, 3, 0, 2, 4)", {"B", "N", "qkv", "h", "d_k"});
    });
    const Tensor dqkv = moved.contiguous().view({B, N, 3 * h * d_k});
    const std::string width = "3·" + q_width_name(s);
    trace.show(dqkv, [&] {
        Step step = described(Operand::Qkv, StepKind::SplitHeads, 4, "reshape", "dqkv",
                              "dqkv = dqkv.permute(1, 3, 0, 2, 4).reshape(B, N, " + width + ")",
                              {"B", "N", width});
        step.copied_bytes = copy_bytes(moved);
        return step;
    });
    const Tensor bias = stacked_qkv_bias(f.w, f.o.workspace);
    const LinearGrads qkv = linear_backward(in.x_q.contiguous(),
                                            stacked_qkv_weight(f.w, f.o.workspace),
                                            !bias.empty(), dqkv, f.o.threads, f.o.workspace);
    show_linear_grads(
        qkv, {Operand::Qkv, 1, "W_qkv", "b_qkv", "dqkv", "x", "dx", model_dims, {width, "d_model"}},
        trace);
    g.params.w_q = third(f.w.w_q, qkv.dw, 0);
    g.params.w_k = third(f.w.w_k, qkv.dw, 1);
    g.params.w_v = third(f.w.w_v, qkv.dw, 2);
    g.params.b_q = third(f.w.b_q, qkv.db, 0);
    g.params.b_k = third(f.w.b_k, qkv.db, 1);
    g.params.b_v = third(f.w.b_v, qkv.db, 2);
    g.input = qkv.dx;
}

// b14-b6, the shared steps' backward: W_o's gradients, then each head's dQ, dK and dV; the
// gate's part of x_q's gradient (B, N, d_model) into dx_gate.
HeadGrads shared_back(const Forwarded& f, const Tensor& grad_output, Gradients& g,
                      Tensor& dx_gate, PassTrace& trace) {
    trace.begin_backward();
    const Tensor d_out = grad_output.contiguous();
    const Tensor d_heads = output_back(f, d_out, g, dx_gate, trace);  // b14-b11
    return f.o.path == AttentionPath::Streaming ? attend_back_streamed(f, d_heads, trace)
                                                : attend_back(f, d_heads, trace);  // b10-b6
}

// The forms and paths the backward differentiates; throws mha::Error for the others.
void check_backward(Form form, const Weights& w, const ForwardOptions& options) {
    if (form == Form::Decode)
        throw Error("the backward does not differentiate the decode form yet");
    if (form == Form::Mla) throw Error("the MLA form's backward is forward_backward_mla");
    if (form != Form::Packed && appended_kv(w, options).count() > 0) {
        throw Error(std::string("the backward of the ") +
                    (form == Form::FusedQkv ? "fused QKV" : "per-head") +
                    " form does not take appended key/value positions (bias_k, bias_v, "
                    "add_zero_attn)");
    }
}

}  // namespace

void check_grad_output(const Tensor& grad_output, const Sizes& s) {
    const Shape expected{s.batch, s.seq_len, s.d_model};
    if (grad_output.shape() != expected) {
        throw Error("the output's gradient is " + to_string(grad_output.shape()) +
                    ", expected the output's shape (B, N, d_model) = " + to_string(expected));
    }
}

Gradients backward(const Weights& w, const Inputs& in, const Masks& masks, const ForwardOptions& o,
                   Form form, const Kept& kept, const Tensor& attention_weights,
                   const Tensor& grad_output, PassTrace& trace, std::optional<BlockKind> block) {
    check_backward(form, w, o);
    Sizes s = check_pass(w, in, masks, o);
    check_grad_output(grad_output, s);
    const std::size_t extra = appended_kv(w, o).count();
    s.kv_len += extra;
    const Masks padded = extra > 0 ? with_appended_keys(masks, extra) : masks;
    const Forwarded f{w, padded, s, o, kept, attention_weights, block, in.self_attention()};
    Gradients g;
    Tensor dx_gate;
    HeadGrads hg = shared_back(f, grad_output, g, dx_gate, trace);  // b14-b6
    position_back(f, hg.dq, hg.dk, g, trace);              // b5
    if (form == Form::FusedQkv) {
        fused_back(f, in, hg, g, trace);  // b5-b1
    } else {
        packed_back(f, in, form == Form::PerHead, hg, g, trace);  // b5-b0
    }
    if (w.gated()) add_gate_input(f, dx_gate, g, trace);  // b0
    return g;
}

BackwardResult forward_backward(const Weights& w, const Inputs& in, const Masks& masks,
                                const ForwardOptions& options, Form form, const Tensor& grad_output,
                                Tracer& tracer) {
    check_backward(form, w, options);
    const Sizes s = check_pass(w, in, masks, options);
    check_grad_output(grad_output, s);
    Kept kept;
    ForwardOptions o = options;
    o.keep = &kept;  // what is kept holds its workspace blocks, so none is reused under it
    check_form(form, s, in.self_attention(), masks);
    PassTrace trace(tracer);
    BackwardResult r;
    r.forward = form == Form::FusedQkv  ? forward_fused_qkv(w, in, masks, o, trace)
                : form == Form::PerHead ? forward_per_head(w, in, masks, o, trace)
                                        : forward(w, in, masks, o, trace);
    r.grads = backward(w, in, masks, o, form, kept, r.forward.weights, grad_output, trace);
    return r;
}

HeadGradients heads_backward(const Weights& w, const Kept& kept, const Tensor& weights,
                             const Masks& masks, const Sizes& sizes, const ForwardOptions& options,
                             const Tensor& grad_output, Gradients& grads, PassTrace& trace) {
    const Forwarded f{w, masks, sizes, options, kept, weights, std::nullopt, true};
    Tensor dx_gate;  // (no gate: MLA refuses one)
    HeadGrads hg = shared_back(f, grad_output, grads, dx_gate, trace);
    return {std::move(hg.dq), std::move(hg.dk), std::move(hg.dv)};
}

}  // namespace mha
