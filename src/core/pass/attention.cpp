// The forward pass of multi-head attention as 14 numbered steps.
//
// Shape legend: B batch, N queries, M keys/values, d_model = h · d_k unless the heads are
// wider (--head-dim: Q and the concat are then h·d_k wide, W_o is (d_model, h·d_k)),
// G key/value heads (h unless shared, see core/kv_heads.h): K and V are (B, G, M, d_k).
//   x_q (B, N, d_model)  x_k (B, M, kdim)  x_v (B, M, vdim)
//   1-3  Q, K, V   = x W.T + b             (B, N, h·d_k), (B, M, G·d_k)
//   4    view                              (B, N|M, h, d_k)
//   5    transpose(1, 2)                   (B, h, N|M, d_k)   no copy
//   6    scores = Q @ K.T                  (B, h, N, M)
//   7    scores / sqrt(d_k)
//   8    mask
//   9    softmax over M -> weights         (B, h, N, M)
//   10   context = weights @ V             (B, h, N, d_v)     d_v = d_k except in MLA
//   11   transpose(1, 2)                   (B, N, h, d_v)     no copy
//   12   contiguous()                      (B, N, h, d_v)     the one copy
//   13   view                              (B, N, h·d_v)      the concat
//   13   gate (--gate): concat * sigmoid(x_q W_g.T + b_g), (B, N, h·d_v) or (B, N, h) broadcast
//   14   output = concat W_o.T + b_o       (B, N, d_model)
//
// Steps 6-10 run on (batch, head) units (run_units), which every form shares. Two
// paths run them: standard stores the scores and weights (and fuses 7-9 when nobody
// watches); streaming (core/kernels/streaming.h) never stores them and writes the context
// straight into (B, N, h, d_k) order, so step 12 has nothing left to copy. Each
// trace.show(...) describes each step beside the line that computes it (core/pass/trace.h).

#include "core/pass/attention.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "core/checked.h"
#include "core/error.h"
#include "core/kernels/streaming.h"
#include "core/kv_heads.h"
#include "core/ops/ops.h"
#include "core/ops/rms_norm.h"
#include "core/pass/describe.h"
#include "core/pass/flash_row.h"
#include "core/pass/projection.h"
#include "core/pass/score_rules.h"
#include "core/pass/shape_checks.h"
#include "core/pass/units.h"

namespace mha {

namespace {

// A contiguous copy of t's values (or, dry, of its shape).
Tensor copy_of(const Tensor& t, Workspace* workspace) {
    if (t.dry()) return new_dry(workspace, t.shape());
    Tensor copy = new_uninitialised(workspace, t.shape());
    t.copy_to(copy.data());
    return copy;
}

// The name of K's and V's width: d_model, or G·d_k when key/value heads are shared.
std::string kv_width_name(const Weights& w) {
    return w.kv_width() == w.q_width() ? "d_model" : "G·d_k";
}

// ---- 0-5: inputs, projections, heads ----------------------------------------------------

using Qkv = HeadTensors;  // three tensors that travel together through steps 1-5

// The very same tensor (storage, offset, shape, strides) plays query, key and value.
bool one_input(const Inputs& in) {
    const auto same = [&](const Tensor& t) {
        return t.shares_storage_with(in.x_q) && t.offset() == in.x_q.offset() &&
               t.shape() == in.x_q.shape() && t.strides() == in.x_q.strides();
    };
    return same(in.x_k) && same(in.x_v);
}

// 1-3: (B, N, d_model) @ (h·d_k, d_model)ᵀ -> (B, N, h·d_k); K and V with M rows, G·d_k
// wide. Self-attention computes the three as one fused product of x, still three tensors.
Qkv project_qkv(const Weights& w, const Inputs& in, const ForwardOptions& o, PassTrace& trace) {
    const PackedWeights* packed = o.packed;
    Qkv x;
    if (one_input(in)) {
        const Tensor x_in = in.x_q.contiguous();
        const std::size_t B = x_in.size(0), L = x_in.size(1);
        x = {new_uninitialised(o.workspace, {B, L, w.w_q.size(0)}),
             new_uninitialised(o.workspace, {B, L, w.w_k.size(0)}),
             new_uninitialised(o.workspace, {B, L, w.w_v.size(0)})};
        if (!any_dry(x_in, w.w_q, x.q))
            project_into(x_in.data(), B * L, w.d_model(),
                     {linear_target(w.w_q, w.b_q, x.q, packed ? &packed->q : nullptr),
                      linear_target(w.w_k, w.b_k, x.k, packed ? &packed->k : nullptr),
                      linear_target(w.w_v, w.b_v, x.v, packed ? &packed->v : nullptr)},
                     o.threads);
    } else {
        x = {project(in.x_q.contiguous(), w.w_q, w.b_q, o.threads, o.workspace,
                     packed ? &packed->q : nullptr),
             project(in.x_k.contiguous(), w.w_k, w.b_k, o.threads, o.workspace,
                     packed ? &packed->k : nullptr),
             project(in.x_v.contiguous(), w.w_v, w.b_v, o.threads, o.workspace,
                     packed ? &packed->v : nullptr)};
    }
    const bool self = in.self_attention();
    const std::string xq = query_name(self), xk = self ? "x" : "x_k", xv = self ? "x" : "x_v";
    const std::size_t B = in.x_q.size(0), N = in.x_q.size(1), M = in.x_k.size(1);
    const std::string kv_width = kv_width_name(w);
    trace.show(x.q, [&] {
        return described(Operand::Q, StepKind::Project, 1, "project", "Q",
                         "Q = " + xq + " @ W_q.T" + bias_suffix(!w.b_q.empty(), "b_q"),
                         {"B", "N", w.q_width() == w.d_model() ? "d_model" : "h·d_k"},
                         macs_of({B, N, w.q_width(), w.d_model()}));
    });
    trace.show(x.k, [&] {
        return described(Operand::K, StepKind::Project, 2, "project", "K",
                         "K = " + xk + " @ W_k.T" + bias_suffix(!w.b_k.empty(), "b_k"),
                         {"B", "M", kv_width}, macs_of({B, M, w.kv_width(), w.kdim()}));
    });
    trace.show(x.v, [&] {
        return described(Operand::V, StepKind::Project, 3, "project", "V",
                         "V = " + xv + " @ W_v.T" + bias_suffix(!w.b_v.empty(), "b_v"),
                         {"B", "M", kv_width}, macs_of({B, M, w.kv_width(), w.vdim()}));
    });
    return x;
}

// x (B, M, W) with rows (W) appended to every batch -> (B, M + rows.size(), W), a copy; a
// null row stays zero (add_zero_attn).
Tensor append_rows(const Tensor& x, const std::vector<const float*>& rows, Workspace* workspace) {
    const std::size_t B = x.size(0), M = x.size(1), W = x.size(2), grown = M + rows.size();
    Tensor out = new_tensor(workspace, {B, grown, W});
    if (out.dry()) return out;
    const Tensor source = x.contiguous();
    for (std::size_t b = 0; b < B; ++b) {
        float* dst = out.data() + b * grown * W;
        std::copy(source.data() + b * M * W, source.data() + (b + 1) * M * W, dst);
        for (std::size_t r = 0; r < rows.size(); ++r) {
            if (rows[r] != nullptr) std::copy(rows[r], rows[r] + W, dst + (M + r) * W);
        }
    }
    return out;
}

// 3, once more: K, V (B, M, ·) -> (B, M + extra, ·): add_bias_kv's bias_k and bias_v, then
// add_zero_attn's zeros, one more key/value position each.
Qkv append_kv(Qkv x, const Weights& w, bool zero_attn, Workspace* workspace, PassTrace& trace) {
    std::vector<const float*> k_rows, v_rows;
    if (!w.bias_k.empty()) {  // (null in a dry run, where no row is copied)
        k_rows.push_back(w.bias_k.data());
        v_rows.push_back(w.bias_v.data());
    }
    if (zero_attn) {
        k_rows.push_back(nullptr);
        v_rows.push_back(nullptr);
    }
    const std::size_t from = x.k.size(1);
    x.k = append_rows(x.k, k_rows, workspace);
    x.v = append_rows(x.v, v_rows, workspace);
    const bool bias_kv = !w.bias_k.empty();
    const std::string kv_width = kv_width_name(w);
    const auto show = [&](const Tensor& t, const std::string& name, Operand operand) {
        trace.show(t, [&] {
            std::string expression = name;
            if (bias_kv) {
                expression = "cat([" + expression + ", bias_" + (name == "K" ? "k" : "v") +
                             ".repeat(B, 1, 1)], dim=1)";
            }
            if (zero_attn)
                expression = "cat([" + expression + ", zeros(B, 1, " + kv_width + ")], dim=1)";
            Step step = described(operand, StepKind::Append, 3, "append", name,
                                  name + " = " + expression,
                                  {"B", "M+" + std::to_string(k_rows.size()), kv_width});
            step.copied_bytes = macs_of({t.size(0), t.size(1), t.size(2), sizeof(float)});
            step.facts.appended = AppendedFacts{from, t.size(1), bias_kv, zero_attn};
            return step;
        });
    };
    show(x.k, "K", Operand::K);
    show(x.v, "V", Operand::V);
    return x;
}

// x (..., M) -> (..., M + extra): every row gets `extra` zeros at its end.
Tensor pad_last_dim(const Tensor& x, std::size_t extra) {
    if (x.empty()) return x;
    Shape shape = x.shape();
    const std::size_t M = shape.back();
    const std::size_t rows = element_count(Shape(shape.begin(), shape.end() - 1));
    shape.back() += extra;
    if (x.dry()) return x.dry_result(shape);
    Tensor out(shape);
    const Tensor source = x.contiguous();
    for (std::size_t r = 0; r < rows; ++r) {
        std::copy(source.data() + r * M, source.data() + (r + 1) * M, out.data() + r * (M + extra));
    }
    return out;
}

// 4: (B, L, d_model) -> (B, L, h, d_k), no copy; 5: -> (B, h, L, d_k), strides swapped,
// no copy. K and V split into G heads instead of h.
Qkv split_heads(const Qkv& x, const Sizes& s, PassTrace& trace) {
    const std::size_t B = s.batch, N = s.seq_len, M = s.kv_len, d_k = s.d_k();
    const Qkv viewed{x.q.view({B, N, s.heads, d_k}), x.k.view({B, M, s.kv_heads, d_k}),
                     x.v.view({B, M, s.kv_heads, d_k})};
    const bool shared = s.kv_heads != s.heads;
    const std::string g = shared ? "G" : "h", e = shared ? "g" : "h";  // e: einops' K/V heads
    trace.show(viewed.q, [&] {
        Step step = described(Operand::Q, StepKind::SplitHeads, 4, "view", "Q",
                              "Q.view(B, N, h, d_k)", {"B", "N", "h", "d_k"});
        step.einops = "b n (h d) -> b n h d";
        return step;
    });
    for (const auto& [t, name, operand] : {std::tuple(&viewed.k, "K", Operand::K),
                                           std::tuple(&viewed.v, "V", Operand::V)}) {
        trace.show(*t, [&, name = std::string(name), operand = operand] {
            Step step = described(operand, StepKind::SplitHeads, 4, "view", name,
                                  name + ".view(B, M, " + g + ", d_k)", {"B", "M", g, "d_k"});
            step.einops = "b m (" + e + " d) -> b m " + e + " d";
            return step;
        });
    }
    const Qkv heads{viewed.q.transpose(1, 2), viewed.k.transpose(1, 2), viewed.v.transpose(1, 2)};
    trace.show(heads.q, [&] {
        Step step = described(Operand::Q, StepKind::MoveHeads, 5, "transpose", "Q",
                              "Q.transpose(1, 2)", {"B", "h", "N", "d_k"});
        step.einops = "b n h d -> b h n d";
        return step;
    });
    trace.show(heads.k, [&] {
        Step step = described(Operand::K, StepKind::MoveHeads, 5, "transpose", "K",
                              "K.transpose(1, 2)", {"B", g, "M", "d_k"});
        step.einops = "b m " + e + " d -> b " + e + " m d";
        if (shared) {
            for (std::size_t i = 0; i < s.heads; ++i)
                step.facts.kv_head_of_query.push_back(kv_head_of(i, s.heads, s.kv_heads));
        }
        return step;
    });
    trace.show(heads.v, [&] {
        Step step = described(Operand::V, StepKind::MoveHeads, 5, "transpose", "V",
                              "V.transpose(1, 2)", {"B", g, "M", "d_k"});
        step.einops = "b m " + e + " d -> b " + e + " m d";
        if (shared) step.facts.kv_costs = s;
        return step;
    });
    return heads;
}

}  // namespace

void position_heads(const Weights& w, Tensor& q, Tensor& k, std::size_t first_query,
                    std::size_t first_key, const ForwardOptions& options, PassTrace& trace,
                    const std::string& id) {
    const std::string Q = "Q" + id, K = "K" + id;
    const bool heads = q.dim() == 4;  // (B, h, N, d_k); a head of its own: (B, N, d_k)
    const Dims q_dims = heads ? Dims{"B", "h", "N", "d_k"} : Dims{"B", "N", "d_k"};
    const Dims k_dims = !heads                   ? Dims{"B", "M", "d_k"}
                        : k.size(1) == q.size(1) ? Dims{"B", "h", "M", "d_k"}
                                                 : Dims{"B", "G", "M", "d_k"};
    if (!w.q_norm.empty()) {  // RMSNorm of each head's (d_k) rows
        rms_norm_rows(q, w.q_norm, options.qk_norm_eps);
        trace.show(q, [&] {
            return described(Operand::Q, StepKind::QkNorm, 5, "qk-norm", Q,
                             Q + " = q_norm(" + Q + ")", q_dims);
        });
        rms_norm_rows(k, w.k_norm, options.qk_norm_eps);
        trace.show(k, [&] {
            return described(Operand::K, StepKind::QkNorm, 5, "qk-norm", K,
                             K + " = k_norm(" + K + ")", k_dims);
        });
    }
    if (!options.rope) return;
    const Rope& rope = *options.rope;
    const auto rotated = [&](const std::string& x) {
        return rope.layout == RopeLayout::Half
                   ? x + " = " + x + " * cos + rotate_half(" + x + ") * sin"
                   : x + " = apply_rotary_emb(" + x + ", freqs_cis)";
    };
    apply_rope(q, rope, first_query);
    trace.show(q, [&] {
        Step step = described(Operand::Q, StepKind::Rope, 5, "rope", Q, rotated(Q), q_dims);
        Sizes s;  // the angles' positions: N queries up to the M keys
        s.seq_len = q.size(q.dim() - 2);
        s.kv_len = k.size(k.dim() - 2);
        s.head_dim = q.size(q.dim() - 1);
        step.facts.rope = rope_facts(rope, s);
        return step;
    });
    apply_rope(k, rope, first_key);
    trace.show(k, [&] { return described(Operand::K, StepKind::Rope, 5, "rope", K, rotated(K), k_dims); });
}

void show_inputs(const Inputs& in, PassTrace& trace) {
    const bool self = in.self_attention();
    const std::string x = query_name(self);
    trace.show(in.x_q, [&] {
        return described(StepKind::Input, 0, "input", x, x, {"B", "N", "d_model"});
    });
    if (self) return;
    const auto width = [&](const Tensor& t, const char* own) {
        return t.size(2) == in.x_q.size(2) ? "d_model" : own;
    };
    trace.show(in.x_k, [&] {
        return described(StepKind::Input, 0, "input", "x_k", "x_k",
                         {"B", "M", width(in.x_k, "kdim")});
    });
    trace.show(in.x_v, [&] {
        return described(StepKind::Input, 0, "input", "x_v", "x_v",
                         {"B", "M", width(in.x_v, "vdim")});
    });
}

UnitMath unit_math(const Sizes& s, const ForwardOptions& options) {
    const double base = options.scale_base > 0 ? options.scale_base : double(s.d_k());
    return {score_factor(base, options.scale),
            options.zero_masked_rows};
}

namespace {

// Unit u = (b, i) of the packed heads: Q[b, i], the K/V head it reads, and its slices of
// the scores (B, h, N, M; may be empty) and of the context (B, h, N, d_v; any strides).
Units packed_units(const Qkv& heads, const Masks& masks, const Sizes& s, Tensor& scores,
                   Tensor& context) {
    // no query or no key: nothing to score, and the context stays zero, as
    // weights (N, 0) @ V (0, d_k) is
    const bool empty = s.seq_len == 0 || s.kv_len == 0;
    return {empty ? 0 : s.batch * s.heads, [&, s](std::size_t u) {
                const std::size_t b = u / s.heads, i = u % s.heads;
                const std::size_t g = kv_head_of(i, s.heads, s.kv_heads);
                const Strides& st = context.strides();
                return AttentionUnit{
                    head_matrix(heads.q, b, i),
                    head_matrix(heads.k, b, g),
                    head_matrix(heads.v, b, g),
                    unit_mask(masks, b, i, s),
                    scores.empty() ? nullptr : scores.data() + u * s.seq_len * s.kv_len,
                    context.data() + b * st[0] + i * st[1],
                    st[2],
                    b,
                    i};
            }};
}

// The context's storage, (B, h, N, d_v) or (B, N, h, d_v): each unit writes every element
// of its slice (a fully masked row as NaN or zeros), so it needs no zero fill, unless there
// is no key: then no unit runs and the context is the zero of an empty weighted sum.
Tensor new_context(const Sizes& s, Shape shape, Workspace* workspace) {
    return s.kv_len == 0 ? new_tensor(workspace, std::move(shape))
                         : new_uninitialised(workspace, std::move(shape));
}

// 6-10 on the standard path: the (B, h, N, M) scores become the weights in place.
Tensor attend_standard(const Qkv& heads, const Masks& masks, const Sizes& s,
                       const ForwardOptions& o, PassTrace& trace, ForwardResult& result) {
    // 6 writes every score (none when N or M is 0); 8-9 rewrite them in place
    Tensor scores = new_uninitialised(o.workspace, {s.batch, s.heads, s.seq_len, s.kv_len});
    Tensor context = new_context(s, {s.batch, s.heads, s.seq_len, s.d_v()}, o.workspace);
    const Units units = packed_units(heads, masks, s, scores, context);
    const UnitMath math = unit_math(s, o);
    auto run = [&](UnitStep step) {  // a dry run computes nothing
        return scores.dry() ? std::size_t(0) : run_units(step, units, math, o.threads);
    };
    if (!trace.on()) {  // nobody watches: each unit runs 6-10 at once, 7-9 fused row by row
        result.fully_masked_rows = run(UnitStep::Attend);
        result.weights = scores;
        return context;
    }
    const std::size_t B = s.batch, N = s.seq_len, M = s.kv_len, h = s.heads, d_k = s.d_k();
    const Dims dims = {"B", "h", "N", "M"};
    run(UnitStep::Scores);  // 6: Q @ K.T  (B, h, N, M)
    trace.show(scores, [&] {
        Step step = described(StepKind::Scores, 6, "scores", "scores",
                              "scores = Q @ K.transpose(-2, -1)", dims, macs_of({B, h, N, M, d_k}));
        if (s.kv_heads != h) step.facts.kv_group = h / s.kv_heads;
        step.facts.stored_score_bytes = macs_of({B, h, N, M, sizeof(float)});
        return step;
    });
    run(UnitStep::Scale);  // 7: / sqrt(d_k)
    trace.show(scores, [&] {
        const bool base = o.scale_base > 0;
        Step step = described(StepKind::Scale, 7, "scale", "scores",
                              !o.scale ? "scores  (not scaled)"
                              : base   ? "scores / math.sqrt(query_pre_attn_scalar)"
                                       : "scores / math.sqrt(d_k)",
                              dims);
        step.facts.scale_d_k = d_k;
        if (base) step.facts.scale_base = o.scale_base;
        if (o.scale) step.facts.scale_factor = unit_math(s, o).factor;
        if (masks.softcap > 0) {
            step.expression += ", then softcap * torch.tanh(scores / softcap)";
            step.facts.softcap = masks.softcap;
        }
        return step;
    });
    run(UnitStep::Mask);  // 8: + mask, blocked -> -inf
    trace.show_masked(scores, masks, [&] {
        Step step = described(StepKind::Mask, 8, "mask", "scores",
                              masks.any() ? "scores + mask  (blocked: -inf)" : "scores  (unchanged)",
                              dims);
        mask_facts(masks, s, N, M, step.facts);
        return step;
    });
    result.fully_masked_rows = run(UnitStep::Normalise);  // 9: the normaliser over M
    trace.show(scores, [&] {
        const Normaliser& normaliser = normaliser_of(masks);
        Step step = described(StepKind::Softmax, 9, normaliser.name, "weights",
                              std::string("weights = ") + normaliser.torch, dims);
        step.facts.normaliser = &normaliser;
        return step;
    });
    run(UnitStep::Context);  // 10: weights @ V  (B, h, N, d_v)
    trace.show(context, [&] {
        return described(StepKind::Context, 10, "context", "context", "context = weights @ V",
                         {"B", "h", "N", v_dim_name(s)}, macs_of({B, h, N, M, s.d_v()}));
    });
    result.weights = scores;
    return context;
}

// 6-10 on the streaming path: one traced step, no (B, h, N, M) tensor. The context is
// stored in (B, N, h, d_v) order and returned as its (B, h, N, d_v) transpose.
Tensor attend_streamed(const Qkv& heads, const Masks& masks, const Sizes& s,
                       const ForwardOptions& o, PassTrace& trace, ForwardResult& result) {
    Tensor none;
    Tensor context =
        new_context(s, {s.batch, s.seq_len, s.heads, s.d_v()}, o.workspace).transpose(1, 2);
    const Units packed = packed_units(heads, masks, s, none, context);
    if (o.keep) {  // what a backward reads instead of P
        const Shape shape = {s.batch, s.heads, s.seq_len};
        o.keep->lse = context.dry() ? new_dry(o.workspace, shape) : new_tensor(o.workspace, shape);
    }
    float* const lse = o.keep ? o.keep->lse.data() : nullptr;
    const Units units{packed.count, [&](std::size_t u) {
                          AttentionUnit unit = packed.unit(u);
                          if (lse) unit.lse = lse + u * s.seq_len;
                          return unit;
                      }};
    if (!context.dry())
        result.fully_masked_rows = run_units(UnitStep::Streamed, units, unit_math(s, o), o.threads);
    trace.show(context, [&] {
        const std::size_t B = s.batch, N = s.seq_len, M = s.kv_len, h = s.heads;
        Step step = described(
            StepKind::Attend, 10, "attend", "context",
            "context = " +
                normaliser_of(masks).applied("Q @ K.T" + scale_suffix(o.scale, o.scale_base) +
                                             " + mask") +
                " @ V, streamed",
            {"B", "h", "N", v_dim_name(s)}, macs_of({B, h, N, M, s.d_k() + s.d_v()}));
        StepFacts& facts = step.facts;
        if (masks.softcap > 0) facts.softcap = masks.softcap;
        mask_facts(masks, s, N, M, facts);
        facts.unstored_score_bytes = macs_of({B, h, N, M, sizeof(float)});
        facts.query_tile = stream_query_tile;
        facts.key_tile = stream_key_tile;
        if (o.flash_row && units.count > 0 && !context.dry()) {  // batch 0, head 0, one row
            const AttentionUnit u = units.unit(0);
            facts.flash =
                flash_facts(u.q, u.k, u.v, u.mask, unit_math(s, o).factor, *o.flash_row, 0);
        }
        return step;
    });
    return context;
}

}  // namespace

// Ablation, between 10 and 11: context[:, head] = 0 through the strides, so it is right
// for the standard context (B, h, N, d_v) and the streaming one, a view of (B, N, h, d_v).
void zero_head(Tensor& context, std::size_t head) {
    if (context.dry()) return;
    const Strides& st = context.strides();
    float* base = context.data() + head * st[1];
    for (std::size_t b = 0; b < context.size(0); ++b) {
        for (std::size_t n = 0; n < context.size(2); ++n) {
            float* row = base + b * st[0] + n * st[2];
            for (std::size_t d = 0; d < context.size(3); ++d) row[d * st[3]] = 0.0f;
        }
    }
}

namespace {

// ---- 11-13: the heads side by side again ------------------------------------------------

// 11: (B, h, N, d_v) -> (B, N, h, d_v), no copy; 12: the one copy; 13: -> (B, N, h·d_v).
Tensor combine_heads(const Tensor& context, const Sizes& s, Workspace* workspace,
                     PassTrace& trace) {
    const Dims dims = {"B", "N", "h", v_dim_name(s)};
    const std::string d = s.d_v() == s.d_k() ? "d" : "dv";  // einops' name of the head width
    const Tensor back = context.transpose(1, 2);
    trace.show(back, [&] {
        Step step = described(StepKind::MergeHeads, 11, "transpose", "context",
                              "context.transpose(1, 2)", dims);
        step.einops = "b h n " + d + " -> b n h " + d;
        return step;
    });
    const Tensor packed = back.is_contiguous() ? back : copy_of(back, workspace);
    trace.show(packed, [&] {
        Step step =
            described(StepKind::Contiguous, 12, "contiguous", "context", "context.contiguous()", dims);
        step.copied_bytes = copy_bytes(back);
        return step;
    });
    const Tensor concat = packed.view({s.batch, s.seq_len, s.value_inner()});
    trace.show(concat, [&] {
        const std::string width = concat_width_name(s);
        Step step = described(StepKind::JoinHeads, 13, "view", "concat",
                              "concat = context.view(B, N, " + width + ")", {"B", "N", width});
        step.einops = "b n h " + d + " -> b n (h " + d + ")";
        return step;
    });
    return concat;
}

}  // namespace

Tensor gate_concat(const Weights& w, const Tensor& x, const std::string& x_name,
                   const Tensor& concat, std::size_t heads, const ForwardOptions& o,
                   PassTrace& trace, Tensor* kept_gate) {
    if (!w.gated()) return concat;
    const std::size_t B = concat.size(0), N = concat.size(1), W = concat.size(2);
    const std::size_t rows = w.w_g.size(0);
    if ((rows != W && rows != heads) || w.w_g.size(1) != x.size(2) ||
        (!w.b_g.empty() && w.b_g.shape() != Shape{rows})) {
        throw Error("the gate's attn_gate.weight is " + to_string(w.w_g.shape()) +
                    ", expected (h·d_k, d_model) = (" + std::to_string(W) + ", " +
                    std::to_string(x.size(2)) + ") element-wise or (h, d_model) = (" +
                    std::to_string(heads) + ", " + std::to_string(x.size(2)) +
                    ") head-wise, and attn_gate.bias (rows)");
    }
    const bool headwise = rows != W;  // (at d_v = 1 the two are one)
    Tensor gate = project(x.contiguous(), w.w_g, w.b_g, o.threads, o.workspace);  // (B, N, rows)
    Tensor gated = new_uninitialised(o.workspace, {B, N, W});
    if (!any_dry(gate, gated)) {
        for (float* g = gate.data(), *end = g + gate.numel(); g != end; ++g)
            *g = 1.0f / (1.0f + std::exp(-*g));  // torch.sigmoid
        const Tensor in = concat.contiguous();
        const std::size_t d_v = W / heads;
        for (std::size_t r = 0; r < B * N; ++r) {  // (b, n) rows
            const float* c = in.data() + r * W;
            const float* g = gate.data() + r * rows;
            float* out = gated.data() + r * W;
            for (std::size_t e = 0; e < W; ++e) out[e] = c[e] * g[headwise ? e / d_v : e];
        }
    }
    const std::string c = W == x.size(2) ? "d_model" : "h·d_k", width = headwise ? "h" : c;
    trace.show(gate, [&] {
        return described(StepKind::Gate, 13, "gate", "gate",
                         "gate = torch.sigmoid(" + x_name + " @ W_g.T" +
                             bias_suffix(!w.b_g.empty(), "b_g") + ")",
                         {"B", "N", width}, macs_of({B, N, rows, x.size(2)}));
    });
    trace.show(gated, [&] {
        return described(StepKind::Gate, 13, "gate", "concat",
                         gated_expression("concat", headwise, c),
                         {"B", "N", c}, macs_of({B, N, W}));
    });
    if (kept_gate) *kept_gate = gate;
    return gated;
}

// ---- The pass -----------------------------------------------------------------------------

std::size_t Weights::parameter_count() const {
    return w_q.numel() + w_k.numel() + w_v.numel() + w_o.numel() + b_q.numel() + b_k.numel() +
           b_v.numel() + b_o.numel() + bias_k.numel() + bias_v.numel() + w_g.numel() +
           b_g.numel();  // an absent bias is an empty tensor: 0 elements
}

AppendedKv appended_kv(const Weights& w, const ForwardOptions& options) {
    return {!w.bias_k.empty(), options.add_zero_attn};
}

Masks with_appended_keys(const Masks& masks, std::size_t extra) {
    Masks padded = masks;
    padded.attn_mask = pad_last_dim(masks.attn_mask, extra);
    padded.key_padding = pad_last_dim(masks.key_padding, extra);
    return padded;
}

ForwardResult forward(const Weights& w, const Inputs& in, const Masks& masks,
                      const ForwardOptions& options, Tracer& tracer) {
    PassTrace trace(tracer);
    return forward(w, in, masks, options, trace);
}

ForwardResult forward(const Weights& w, const Inputs& in, const Masks& masks,
                      const ForwardOptions& options, PassTrace& trace) {
    Sizes s = check_pass(w, in, masks, options);
    const std::size_t extra = appended_kv(w, options).count();
    s.kv_len += extra;       // from step 3 on, K and V have the appended positions too
    show_inputs(in, trace);  // 0
    Qkv projected = project_qkv(w, in, options, trace);  // 1-3
    const std::string x = query_name(in.self_attention());  // the gate's input (13)
    if (extra == 0) {
        return forward_from_heads(w, split_heads(projected, s, trace), masks, s, options, trace,
                                  in.x_q, x);  // 4-5, then 6-14
    }
    projected =
        append_kv(std::move(projected), w, options.add_zero_attn, options.workspace, trace);  // 3: M + extra
    return forward_from_heads(w, split_heads(projected, s, trace), with_appended_keys(masks, extra),
                              s, options, trace, in.x_q, x);
}

ForwardResult forward_from_heads(const Weights& w, HeadTensors heads, const Masks& masks,
                                 const Sizes& s, const ForwardOptions& options, PassTrace& trace,
                                 const Tensor& x_q, const std::string& x_name) {
    Kept* keep = options.keep;
    if (keep && !w.q_norm.empty()) {  // QK-norm's backward reads what it normalised
        keep->q_raw = copy_of(heads.q, options.workspace);
        keep->k_raw = copy_of(heads.k, options.workspace);
    }
    position_heads(w, heads.q, heads.k, s.kv_len - s.seq_len, 0, options, trace, "");  // 5
    ForwardResult result;
    Tensor context = options.path == AttentionPath::Streaming
                         ? attend_streamed(heads, masks, s, options, trace, result)
                         : attend_standard(heads, masks, s, options, trace, result);  // 6-10
    if (keep) {
        keep->q = heads.q;
        keep->k = heads.k;
        keep->v = heads.v;
        keep->context = context;
    }
    heads = HeadTensors{};  // Q, K and V are freed before steps 11-14 (unless kept)
    if (options.ablate_head) zero_head(context, *options.ablate_head);
    const Tensor concat = gate_concat(w, x_q, x_name,
                                      combine_heads(context, s, options.workspace, trace),
                                      s.heads, options, trace,
                                      keep ? &keep->gate : nullptr);  // 11-13, 13 gated
    if (keep) {
        keep->concat = concat;
        keep->x_q = x_q;
    }

    // 14: mix the heads. (B, N, h·d_v) @ (d_model, h·d_v)ᵀ -> (B, N, d_model)
    result.output = project(concat, w.w_o, w.b_o, options.threads, options.workspace,
                            options.packed ? &options.packed->o : nullptr);
    trace.show(result.output, [&] { return output_described(s, !w.b_o.empty()); });
    return result;
}

}  // namespace mha
