// Attention head by head, each with its own slices of W_q, W_k and W_v, on the same
// (batch, head) units as the packed pass.
//
//   x_q (B, N, d_model)  x_k (B, M, kdim)  x_v (B, M, vdim)
//   for every head i (reading key/value head g = i / (h / G)):
//     1-3  Q_i = x_q W_q^i.T + b_q^i        (B, N, d_k);  K_i, V_i (B, M, d_k) from slice g
//     6    scores_i = Q_i @ K_i.T           (B, N, M)
//     9    weights_i = softmax(scores_i / sqrt(d_k) + mask)
//     10   head_i = weights_i @ V_i          (B, N, d_k)
//   13   concat = cat(head_0 .. head_{h-1}, dim=-1)   (B, N, h·d_k)     a copy
//   13   gate (--gate): concat * sigmoid(x_q W_g.T + b_g)
//   14   output = concat W_o.T + b_o                  (B, N, d_model)

#include "core/forms/per_head.h"

#include <algorithm>
#include <string>
#include <utility>

#include "core/kv_heads.h"
#include "core/pass/describe.h"
#include "core/pass/projection.h"
#include "core/pass/score_rules.h"
#include "core/pass/shape_checks.h"

namespace mha {

namespace {

// The (L, d_k) matrix of batch row b in a contiguous (B, L, d_k) tensor.
MatrixView batch_matrix(const Tensor& t, std::size_t b) {
    const std::size_t rows = t.size(1), cols = t.size(2);
    return {t.data() + b * rows * cols, rows, cols, cols, 1};
}

// Head i's own tensors.
struct Head {
    Tensor q, k, v;  // (B, N, d_k), (B, M, d_k), (B, M, d_k)
    Tensor weights;  // (B, N, M); empty on the streaming path
    Tensor context;  // (B, N, d_k)
};

// "Q_1 = x @ W_q[8:16].T + b_q[8:16]": head i's projection from its rows of the weight.
std::string slice_projection(const std::string& out, const std::string& x, const std::string& w,
                             const std::string& b, bool bias, std::size_t first,
                             std::size_t count) {
    const std::string rows =
        "[" + std::to_string(first) + ":" + std::to_string(first + count) + "]";
    return out + " = " + x + " @ " + w + rows + ".T" + bias_suffix(bias, b + rows);
}

// 1-3: head i's projections from its rows of W_q and key/value head g's of W_k and W_v.
Head project_head(const Weights& w, const Inputs& in, const Sizes& s, std::size_t i,
                  const ForwardOptions& o, PassTrace& trace) {
    const std::size_t B = s.batch, N = s.seq_len, M = s.kv_len, d_k = s.d_k();
    const std::size_t g = kv_head_of(i, s.heads, s.kv_heads);
    const bool self = in.self_attention();
    const std::string id = std::to_string(i);
    const auto sliced = [&](const Tensor& x, const Tensor& weight, const Tensor& bias,
                            std::size_t head) {
        return project(x.contiguous(), row_slice(weight, head * d_k, d_k),
                       row_slice(bias, head * d_k, d_k), o.threads, o.workspace);
    };
    Head head;
    head.q = sliced(in.x_q, w.w_q, w.b_q, i);
    trace.show(head.q, [&] {
        return described(Operand::Q, StepKind::Project, 1, "project", "Q_" + id,
                         slice_projection("Q_" + id, query_name(self), "W_q", "b_q",
                                          !w.b_q.empty(), i * d_k, d_k),
                         {"B", "N", "d_k"}, macs_of({B, N, d_k, s.d_model}));
    });
    head.k = sliced(in.x_k, w.w_k, w.b_k, g);
    trace.show(head.k, [&] {
        Step step = described(Operand::K, StepKind::Project, 2, "project", "K_" + id,
                              slice_projection("K_" + id, self ? "x" : "x_k", "W_k", "b_k",
                                               !w.b_k.empty(), g * d_k, d_k),
                              {"B", "M", "d_k"}, macs_of({B, M, d_k, s.kdim}));
        if (s.kv_heads != s.heads) step.facts.reads_kv_head = std::make_pair(i, g);
        return step;
    });
    head.v = sliced(in.x_v, w.w_v, w.b_v, g);
    trace.show(head.v, [&] {
        return described(Operand::V, StepKind::Project, 3, "project", "V_" + id,
                         slice_projection("V_" + id, self ? "x" : "x_v", "W_v", "b_v",
                                          !w.b_v.empty(), g * d_k, d_k),
                         {"B", "M", "d_k"}, macs_of({B, M, d_k, s.vdim}));
    });
    return head;
}

// 6-10 for head i on its B units; returns the rows with every key blocked.
std::size_t attend_head(Head& head, const Masks& masks, const Sizes& s, std::size_t i,
                        const ForwardOptions& o, PassTrace& trace) {
    const std::size_t B = s.batch, N = s.seq_len, M = s.kv_len, d_k = s.d_k();
    const bool streamed = o.path == AttentionPath::Streaming;
    if (!streamed) head.weights = new_tensor(o.workspace, {B, N, M});
    head.context = new_tensor(o.workspace, {B, N, d_k});
    float* const lse = streamed && o.keep ? o.keep->lse.data() : nullptr;  // (B, h, N)
    const Units units{B, [&](std::size_t b) {
                          return AttentionUnit{batch_matrix(head.q, b),
                                               batch_matrix(head.k, b),
                                               batch_matrix(head.v, b),
                                               unit_mask(masks, b, i, s),
                                               streamed ? nullptr : head.weights.data() + b * N * M,
                                               head.context.data() + b * N * d_k,
                                               d_k,
                                               b,
                                               i,
                                               0,
                                               lse ? lse + (b * s.heads + i) * N : nullptr};
                      }};
    const UnitMath math = unit_math(s, o);
    auto run = [&](UnitStep step) {  // a dry run computes nothing
        return any_dry(head.q, head.context) ? std::size_t(0)
                                             : run_units(step, units, math, o.threads);
    };
    const std::string id = std::to_string(i), Q = "Q_" + id, K = "K_" + id, V = "V_" + id;
    const std::string scaled = scale_suffix(o.scale, o.scale_base);
    const Normaliser& normaliser = normaliser_of(masks);
    if (streamed) {  // 6-10 as one step
        const std::size_t blocked = run(UnitStep::Streamed);
        trace.show(head.context, [&] {
            Step step = described(StepKind::Attend, 10, "attend", "head_" + id,
                                  "head_" + id + " = " +
                                      normaliser.applied(Q + " @ " + K + ".T" + scaled + " + mask") +
                                      " @ " + V + ", streamed",
                                  {"B", "N", "d_k"}, macs_of({2, B, N, M, d_k}));
            mask_facts(masks, s, N, M, step.facts);
            return step;
        });
        return blocked;
    }
    if (!trace.on()) return run(UnitStep::Attend);  // 6-10 per unit, 7-9 fused
    run(UnitStep::Scores);                          // 6: Q_i @ K_i.T
    trace.show(head.weights, [&] {
        return described(StepKind::Scores, 6, "scores", "scores_" + id,
                         "scores_" + id + " = " + Q + " @ " + K + ".T", {"B", "N", "M"},
                         macs_of({B, N, M, d_k}));
    });
    const std::size_t blocked = run(UnitStep::ScaleMaskNormalise);  // 7-9, traced as one step
    trace.show(head.weights, [&] {
        Step step = described(StepKind::Softmax, 9, normaliser.name, "weights_" + id,
                              "weights_" + id + " = " +
                                  normaliser.applied("scores_" + id + scaled + " + mask"),
                              {"B", "N", "M"});
        mask_facts(masks, s, N, M, step.facts);
        step.facts.normaliser = &normaliser;
        return step;
    });
    run(UnitStep::Context);  // 10: weights_i @ V_i
    trace.show(head.context, [&] {
        return described(StepKind::Context, 10, "context", "head_" + id,
                         "head_" + id + " = weights_" + id + " @ " + V, {"B", "N", "d_k"},
                         macs_of({B, N, M, d_k}));
    });
    return blocked;
}

// Head i's weights into weights[:, i] and its context into concat[:, :, i·d_k : (i+1)·d_k].
void place_head(const Head& head, std::size_t i, const Sizes& s, Tensor& weights, Tensor& concat) {
    if (any_dry(head.context, concat)) return;
    const std::size_t N = s.seq_len, M = s.kv_len, W = s.inner(), d_k = s.d_k();
    for (std::size_t b = 0; b < s.batch; ++b) {
        if (!weights.empty()) {
            const float* from = head.weights.data() + b * N * M;
            std::copy(from, from + N * M, weights.data() + (b * s.heads + i) * N * M);
        }
        for (std::size_t n = 0; n < N; ++n) {
            const float* row = head.context.data() + (b * N + n) * d_k;
            std::copy(row, row + d_k, concat.data() + (b * N + n) * W + i * d_k);
        }
    }
}

// What the backward reads, in the packed form's layout: Q and the context (B, h, N, d_k), K and V
// (B, G, M, d_k), and Q and K before QK-norm when there is one; filled head by head.
Kept kept_tensors(const Sizes& s, bool qk_norm, Workspace* workspace) {
    const std::size_t B = s.batch, N = s.seq_len, M = s.kv_len, d_k = s.d_k();
    const Shape queries = {B, s.heads, N, d_k}, keys = {B, s.kv_heads, M, d_k};
    Kept kept;
    kept.q = new_tensor(workspace, queries);
    kept.k = new_tensor(workspace, keys);
    kept.v = new_tensor(workspace, keys);
    kept.context = new_tensor(workspace, queries);
    if (qk_norm) {
        kept.q_raw = new_tensor(workspace, queries);
        kept.k_raw = new_tensor(workspace, keys);
    }
    return kept;
}

// Head i's query-side tensor a (B, L, d_k) into [:, i] of to_a, and, for the first query head
// of each K/V group, its key/value-side b into [:, g] of to_b.
void keep_head(const Tensor& a, const Tensor& b, std::size_t i, const Sizes& s, Tensor& to_a,
               Tensor& to_b) {
    if (any_dry(a, b, to_a, to_b)) return;
    const std::size_t r = s.heads / s.kv_heads, g = kv_head_of(i, s.heads, s.kv_heads);
    const auto place = [](const Tensor& from, std::size_t head, Tensor& to) {
        const std::size_t B = from.size(0), size = from.size(1) * from.size(2);
        for (std::size_t batch = 0; batch < B; ++batch) {
            const float* row = from.data() + batch * size;
            std::copy(row, row + size, to.data() + (batch * to.size(1) + head) * size);
        }
    };
    place(a, i, to_a);
    if (i % r == 0) place(b, g, to_b);
}

}  // namespace

Tensor row_slice(const Tensor& t, std::size_t first, std::size_t count) {
    if (t.empty()) return t;
    Shape shape = t.shape();
    shape[0] = count;
    if (t.dry()) return t.dry_result(shape);
    const std::size_t row = t.numel() / t.size(0);
    const float* begin = t.contiguous().data() + first * row;
    return Tensor(shape, std::vector<float>(begin, begin + count * row));
}

ForwardResult forward_per_head(const Weights& w, const Inputs& in, const Masks& masks,
                               const ForwardOptions& options, Tracer& tracer) {
    PassTrace trace(tracer);
    return forward_per_head(w, in, masks, options, trace);
}

ForwardResult forward_per_head(const Weights& w, const Inputs& in, const Masks& masks,
                               const ForwardOptions& options, PassTrace& trace) {
    const Sizes s = check_pass(w, in, masks, options);
    const std::size_t B = s.batch, N = s.seq_len;
    Workspace* const workspace = options.workspace;
    Kept* keep = options.keep;
    if (keep) *keep = kept_tensors(s, !w.q_norm.empty(), workspace);
    if (keep && options.path == AttentionPath::Streaming)  // the row log-sum-exp, not P
        keep->lse = new_tensor(workspace, {B, s.heads, N});
    const std::string x = query_name(in.self_attention());
    trace.show(in.x_q, [&] {
        return described(StepKind::Input, 0, "input", x, x, {"B", "N", "d_model"});  // 0
    });

    ForwardResult result;
    if (options.path == AttentionPath::Standard)
        result.weights = new_tensor(workspace, {B, s.heads, N, s.kv_len});
    Tensor concat = new_tensor(workspace, {B, N, s.inner()});
    for (std::size_t i = 0; i < s.heads; ++i) {
        Head head = project_head(w, in, s, i, options, trace);  // 1-3
        if (keep && !w.q_norm.empty()) keep_head(head.q, head.k, i, s, keep->q_raw, keep->k_raw);
        position_heads(w, head.q, head.k, s.kv_len - s.seq_len, 0, options, trace,
                       "_" + std::to_string(i));  // 5
        result.fully_masked_rows += attend_head(head, masks, s, i, options, trace);  // 6-10
        if (options.ablate_head == i)
            head.context = new_tensor(workspace, head.context.shape());  // zeros
        place_head(head, i, s, result.weights, concat);
        if (keep) {
            keep_head(head.q, head.k, i, s, keep->q, keep->k);
            keep_head(head.context, head.v, i, s, keep->context, keep->v);
        }
    }
    trace.show(concat, [&] {  // 13
        Step step = described(
            StepKind::Concat, 13, "concat", "concat",
            "concat = torch.cat([head_0, ..., head_" + std::to_string(s.heads - 1) + "], dim=-1)",
            {"B", "N", q_width_name(s)});
        step.copied_bytes = macs_of({B, N, s.inner(), sizeof(float)});
        step.einops = "h b n d -> b n (h d)";  // rearrange of the list of heads, stacked first
        return step;
    });
    concat = gate_concat(w, in.x_q, x, concat, s.heads, options, trace,
                         keep ? &keep->gate : nullptr);  // 13, gated
    if (keep) {
        keep->concat = concat;
        if (w.gated()) keep->x_q = in.x_q;
    }

    // 14: (B, N, h·d_k) @ (d_model, h·d_k)ᵀ -> (B, N, d_model)
    result.output = project(concat, w.w_o, w.b_o, options.threads, workspace);
    trace.show(result.output, [&] { return output_described(s, !w.b_o.empty()); });
    return result;
}

}  // namespace mha
