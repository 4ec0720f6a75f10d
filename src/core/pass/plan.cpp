// The step plan of every form, from the sizes alone. Each step's PyTorch expression
// is written here and nowhere else; layouts follow from Layout's view, transpose,
// permute and contiguous exactly as the computed tensors' do.

#include "core/pass/plan.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/checked.h"
#include "core/error.h"
#include "core/kernels/streaming.h"
#include "core/kv_heads.h"
#include "core/ops/ops.h"
#include "core/pass/planner.h"
#include "core/pass/score_rules.h"
#include "core/position/position_bias.h"

namespace mha {

Step& Planner::add(StepKind kind, int number, std::string name, std::string tensor,
                   std::string expression, Dims dims, const Layout& layout, std::uint64_t macs) {
    Step& step = steps.emplace_back();
    step.kind = kind;
    step.backward = backward;
    step.number = number;
    step.name = std::move(name);
    step.tensor = std::move(tensor);
    step.expression = std::move(expression);
    step.dims = std::move(dims);
    step.shape = layout.shape;
    step.strides = layout.strides;
    step.contiguous = layout.is_contiguous();
    step.macs = macs;
    return step;
}

Step& Planner::add(Operand operand, StepKind kind, int number, std::string name, std::string tensor,
                   std::string expression, Dims dims, const Layout& layout, std::uint64_t macs) {
    Step& step = add(kind, number, std::move(name), std::move(tensor), std::move(expression),
                     std::move(dims), layout, macs);
    step.operand = operand;
    return step;
}

std::string scale_suffix(const PassSpec& spec) { return scale_suffix(spec.scale, spec.scale_base); }

std::string query_name(const PassSpec& spec) { return query_name(spec.self_attention); }

Layout model_layout(const Sizes& s) {
    return Layout::contiguous_of({s.batch, s.seq_len, s.d_model});
}

Layout hidden_layout(const Planner& p) {
    return Layout::contiguous_of({p.s.batch, p.s.seq_len, p.spec.block->d_ff});
}

std::uint64_t ffn_macs(const Planner& p) {
    return macs_of({p.s.batch, p.s.seq_len, p.spec.block->d_ff, p.s.d_model});
}

namespace {

// Step 9's normaliser written around `scores`: softmax(scores)
std::string applied(const PassSpec& spec, const std::string& scores) {
    return normaliser_of(spec.masks).applied(scores);
}

// What step 8 of the pass applies.
void mask_facts(const PassSpec& spec, StepFacts& facts) {
    mask_facts(spec.masks, spec.sizes, spec.sizes.seq_len, spec.sizes.kv_len, facts);
}

// What bounds token t's one query against the t + 1 cached positions: no causal rule (the
// future is not cached yet), but the window with its sinks, ALiBi and the soft-cap as in the
// full pass, the query at position t.
void token_attend_facts(const PassSpec& spec, std::size_t t, StepFacts& facts) {
    const Sizes& s = spec.sizes;
    const Masks& k = spec.masks;
    facts.token = token_facts(s, t);
    if (k.window > 0) facts.token->window = window_facts(k, s, t + 1);
    if (k.softcap > 0) facts.softcap = k.softcap;
    if (k.alibi) {  // ALiBi alone: the window is the token's fact, and no causal rule applies
        Masks alibi;
        alibi.alibi = true;
        mask_facts(alibi, s, 1, t + 1, facts);
    }
}

// Step 5 after the split: QK-norm, then RoPE, on Q and K (named q_name, k_name), in place:
// the layouts stay.
void plan_position(Planner& p, const Layout& q, const Layout& k, const Dims& q_dims,
                   const Dims& k_dims, const std::string& Q = "Q", const std::string& K = "K") {
    if (p.spec.qk_norm) {
        p.add(Operand::Q, StepKind::QkNorm, 5, "qk-norm", Q, Q + " = q_norm(" + Q + ")", q_dims, q);
        p.add(Operand::K, StepKind::QkNorm, 5, "qk-norm", K, K + " = k_norm(" + K + ")", k_dims, k);
    }
    if (!p.spec.rope) return;
    const bool half = p.spec.rope->layout == RopeLayout::Half;
    const auto rotated = [half](const std::string& x) {
        return half ? x + " = " + x + " * cos + rotate_half(" + x + ") * sin"
                    : x + " = apply_rotary_emb(" + x + ", freqs_cis)";
    };
    p.add(Operand::Q, StepKind::Rope, 5, "rope", Q, rotated(Q), q_dims, q).facts.rope =
        rope_facts(*p.spec.rope, p.s);
    p.add(Operand::K, StepKind::Rope, 5, "rope", K, rotated(K), k_dims, k);
}

// 0: the inputs, named x when one tensor plays query, key and value.
void plan_inputs(Planner& p) {
    const Sizes& s = p.s;
    const std::string x = query_name(p.spec), n = p.spec.form == Form::Decode ? "T" : "N";
    p.add(StepKind::Input, 0, "input", x, x, {"B", n, "d_model"},
          Layout::contiguous_of({s.batch, s.seq_len, s.d_model}));
    if (p.spec.self_attention || p.spec.form != Form::Packed) return;
    const std::size_t M = s.kv_len - p.spec.appended.count();  // the inputs' keys
    p.add(StepKind::Input, 0, "input", "x_k", "x_k",
          {"B", "M", s.kdim == s.d_model ? "d_model" : "kdim"},
          Layout::contiguous_of({s.batch, M, s.kdim}));
    p.add(StepKind::Input, 0, "input", "x_v", "x_v",
          {"B", "M", s.vdim == s.d_model ? "d_model" : "vdim"},
          Layout::contiguous_of({s.batch, M, s.vdim}));
}

// 3, once more: add_bias_kv and add_zero_attn append key/value positions to K and V, a copy;
// from here on there are M = M_in + extra keys.
Layout plan_append(Planner& p, const std::string& kv_width) {
    const Sizes& s = p.s;
    const AppendedKv& a = p.spec.appended;
    const std::size_t B = s.batch, M = s.kv_len, W = s.kv_heads * s.d_k(), extra = a.count();
    const Layout grown = Layout::contiguous_of({B, M, W});
    for (const std::string name : {"K", "V"}) {
        std::string expression = name;
        if (a.bias_kv) {
            expression = "cat([" + expression + ", bias_" + (name == "K" ? "k" : "v") +
                         ".repeat(B, 1, 1)], dim=1)";
        }
        if (a.zero_attn)
            expression = "cat([" + expression + ", zeros(B, 1, " + kv_width + ")], dim=1)";
        Step& step =
            p.add(name == "K" ? Operand::K : Operand::V, StepKind::Append, 3, "append", name,
                  name + " = " + expression, {"B", "M+" + std::to_string(extra), kv_width}, grown);
        step.copied_bytes = checked_product({B, M, W, sizeof(float)}, "the copy");
        step.facts.appended = AppendedFacts{M - extra, M, a.bias_kv, a.zero_attn};
    }
    return grown;
}

// 1-5 packed: project, view, transpose. Returns the layout of Q's heads.
Layout plan_project_split(Planner& p) {
    const Sizes& s = p.s;
    const std::size_t B = s.batch, N = s.seq_len, M = s.kv_len, E = s.d_model, h = s.heads;
    const std::size_t G = s.kv_heads, d_k = s.d_k(), M_in = M - p.spec.appended.count();
    const bool self = p.spec.self_attention;
    const std::string xq = query_name(p.spec), xk = self ? "x" : "x_k", xv = self ? "x" : "x_v";
    const std::string g = G == h ? "h" : "G", kv_width = G == h ? "d_model" : "G·d_k";
    const Layout q = Layout::contiguous_of({B, N, h * d_k}),
                 k = Layout::contiguous_of({B, M, G * d_k});
    const Layout k_in = Layout::contiguous_of({B, M_in, G * d_k});
    p.add(Operand::Q, StepKind::Project, 1, "project", "Q",
          "Q = " + xq + " @ W_q.T" + bias_suffix(p.spec.bias.q, "b_q"), {"B", "N", q_width_name(s)},
          q, macs_of({B, N, h * d_k, E}));
    p.add(Operand::K, StepKind::Project, 2, "project", "K",
          "K = " + xk + " @ W_k.T" + bias_suffix(p.spec.bias.k, "b_k"), {"B", "M", kv_width}, k_in,
          macs_of({B, M_in, G * d_k, s.kdim}));
    p.add(Operand::V, StepKind::Project, 3, "project", "V",
          "V = " + xv + " @ W_v.T" + bias_suffix(p.spec.bias.v, "b_v"), {"B", "M", kv_width}, k_in,
          macs_of({B, M_in, G * d_k, s.vdim}));
    if (p.spec.appended.count() > 0) plan_append(p, kv_width);

    const Layout q4 = q.view({B, N, h, d_k}), k4 = k.view({B, M, G, d_k});
    const std::string e = G == h ? "h" : "g";  // einops' name of the K/V heads
    p.add(Operand::Q, StepKind::SplitHeads, 4, "view", "Q", "Q.view(B, N, h, d_k)",
          {"B", "N", "h", "d_k"}, q4)
        .einops = "b n (h d) -> b n h d";
    for (const std::string name : {"K", "V"}) {
        p.add(name == "K" ? Operand::K : Operand::V, StepKind::SplitHeads, 4, "view", name,
              name + ".view(B, M, " + g + ", d_k)", {"B", "M", g, "d_k"}, k4)
            .einops = "b m (" + e + " d) -> b m " + e + " d";
    }
    p.add(Operand::Q, StepKind::MoveHeads, 5, "transpose", "Q", "Q.transpose(1, 2)",
          {"B", "h", "N", "d_k"}, q4.transpose(1, 2))
        .einops = "b n h d -> b h n d";
    Step& k5 = p.add(Operand::K, StepKind::MoveHeads, 5, "transpose", "K", "K.transpose(1, 2)",
                     {"B", g, "M", "d_k"}, k4.transpose(1, 2));
    Step& v5 = p.add(Operand::V, StepKind::MoveHeads, 5, "transpose", "V", "V.transpose(1, 2)",
                     {"B", g, "M", "d_k"}, k4.transpose(1, 2));
    k5.einops = v5.einops = "b m " + e + " d -> b " + e + " m d";
    if (G != h) {
        for (std::size_t i = 0; i < h; ++i)
            k5.facts.kv_head_of_query.push_back(kv_head_of(i, h, G));
        v5.facts.kv_costs = s;
    }
    plan_position(p, q4.transpose(1, 2), k4.transpose(1, 2), {"B", "h", "N", "d_k"},
                  {"B", g, "M", "d_k"});
    return q4.transpose(1, 2);
}

// 1-5 fused: one projection, view, permute, unbind. Returns the layout of Q's heads.
Layout plan_fused_project_split(Planner& p) {
    const Sizes& s = p.s;
    const std::size_t B = s.batch, N = s.seq_len, E = s.d_model, h = s.heads, d_k = s.d_k();
    const Biases& b = p.spec.bias;
    const Layout qkv = Layout::contiguous_of({B, N, 3 * h * d_k});
    p.add(Operand::Qkv, StepKind::Project, 1, "project", "qkv",
          "qkv = x @ W_qkv.T" + bias_suffix(b.q || b.k || b.v, "b_qkv"),
          {"B", "N", "3·" + q_width_name(s)}, qkv, macs_of({B, N, 3 * h * d_k, E}));
    const Layout split = qkv.view({B, N, 3, h, d_k});
    p.add(Operand::Qkv, StepKind::SplitHeads, 4, "view", "qkv", "qkv.view(B, N, 3, h, d_k)",
          {"B", "N", "qkv", "h", "d_k"}, split)
        .einops = "b n (three h d) -> b n three h d";
    const Layout heads = split.permute({2, 0, 3, 1, 4});
    p.add(Operand::Qkv, StepKind::MoveHeads, 5, "permute", "qkv", "qkv.permute(2, 0, 3, 1, 4)",
          {"qkv", "B", "h", "N", "d_k"}, heads)
        .einops = "b n three h d -> three b h n d";
    const char* names[] = {"Q", "K", "V"};
    const Operand operands[] = {Operand::Q, Operand::K, Operand::V};
    for (std::size_t i = 0; i < 3; ++i) {
        p.add(operands[i], StepKind::Unbind, 5, "unbind", names[i],
              std::string(names[i]) + " = qkv[" + std::to_string(i) + "]", {"B", "h", "N", "d_k"},
              heads.select(0))
            .einops = "b n (three h d) -> three b h n d";  // q, k, v = rearrange(qkv, ...)
    }
    plan_position(p, heads.select(0), heads.select(0), {"B", "h", "N", "d_k"},
                  {"B", "h", "M", "d_k"});
    return heads.select(0);
}

// 6-10 on the standard path. Returns the context's layout.
Layout plan_attend_standard(Planner& p) {
    const Sizes& s = p.s;
    const std::size_t B = s.batch, N = s.seq_len, M = s.kv_len, h = s.heads, d_k = s.d_k();
    const Dims dims = {"B", "h", "N", "M"};
    const Layout scores = Layout::contiguous_of({B, h, N, M});
    Step& s6 = p.add(StepKind::Scores, 6, "scores", "scores", "scores = Q @ K.transpose(-2, -1)",
                     dims, scores, macs_of({B, h, N, M, d_k}));
    if (s.kv_heads != h) s6.facts.kv_group = h / s.kv_heads;
    s6.facts.stored_score_bytes = macs_of({B, h, N, M, sizeof(float)});
    const bool base = p.spec.scale_base > 0;
    Step& s7 = p.add(StepKind::Scale, 7, "scale", "scores",
                     !p.spec.scale ? "scores  (not scaled)"
                     : base        ? "scores / math.sqrt(query_pre_attn_scalar)"
                                   : "scores / math.sqrt(d_k)",
                     dims, scores);
    s7.facts.scale_d_k = d_k;
    if (base) s7.facts.scale_base = p.spec.scale_base;
    if (p.spec.scale)
        s7.facts.scale_factor = score_factor(scale_base_of(s, p.spec.scale_base), true);
    if (p.spec.masks.softcap > 0) {
        s7.expression += ", then softcap * torch.tanh(scores / softcap)";
        s7.facts.softcap = p.spec.masks.softcap;
    }
    const bool masked = p.spec.masks.any();
    Step& s8 =
        p.add(StepKind::Mask, 8, "mask", "scores",
              masked ? "scores + mask  (blocked: -inf)" : "scores  (unchanged)", dims, scores);
    mask_facts(p.spec, s8.facts);
    if ((p.spec.masks.causal || p.spec.masks.window > 0) && N <= max_grid && M <= max_grid)
        s8.allowed = allowed_grid(p.spec.masks, N, M);
    const Normaliser& normaliser = normaliser_of(p.spec.masks);
    p.add(StepKind::Softmax, 9, normaliser.name, "weights",
          std::string("weights = ") + normaliser.torch, dims, scores)
        .facts.normaliser = &normaliser;
    const Layout context = Layout::contiguous_of({B, h, N, s.d_v()});
    p.add(StepKind::Context, 10, "context", "context", "context = weights @ V",
          {"B", "h", "N", v_dim_name(s)}, context, macs_of({B, h, N, M, s.d_v()}));
    return context;
}

// 6-10 on the streaming path: one step; the context is stored as (B, N, h, d_v).
Layout plan_attend_streamed(Planner& p) {
    const Sizes& s = p.s;
    const std::size_t B = s.batch, N = s.seq_len, M = s.kv_len, h = s.heads;
    const Layout context = Layout::contiguous_of({B, N, h, s.d_v()}).transpose(1, 2);
    StepFacts& facts =
        p.add(StepKind::Attend, 10, "attend", "context",
              "context = " + applied(p.spec, "Q @ K.T" + scale_suffix(p.spec) + " + mask") +
                  " @ V, streamed",
              {"B", "h", "N", v_dim_name(s)}, context, macs_of({B, h, N, M, s.d_k() + s.d_v()}))
            .facts;
    if (p.spec.masks.softcap > 0) facts.softcap = p.spec.masks.softcap;
    mask_facts(p.spec, facts);
    facts.unstored_score_bytes = macs_of({B, h, N, M, sizeof(float)});
    facts.query_tile = stream_query_tile;
    facts.key_tile = stream_key_tile;
    return context;
}

// 11-13: transpose back, the one copy, the concat.
void plan_combine(Planner& p, const Layout& context) {
    const Sizes& s = p.s;
    const Dims dims = {"B", "N", "h", v_dim_name(s)};
    const Layout back = context.transpose(1, 2);
    const std::string d = s.d_v() == s.d_k() ? "d" : "dv";  // einops' name of the head width
    p.add(StepKind::MergeHeads, 11, "transpose", "context", "context.transpose(1, 2)", dims, back)
        .einops = "b h n " + d + " -> b n h " + d;
    const Layout packed = back.contiguous();
    p.add(StepKind::Contiguous, 12, "contiguous", "context", "context.contiguous()", dims, packed)
        .copied_bytes =
        back.is_contiguous()
            ? 0
            : checked_product({s.batch, s.seq_len, s.value_inner(), sizeof(float)}, "the copy");
    const std::string width = concat_width_name(s);
    p.add(StepKind::JoinHeads, 13, "view", "concat", "concat = context.view(B, N, " + width + ")",
          {"B", "N", width}, packed.view({s.batch, s.seq_len, s.value_inner()}))
        .einops = "b n h " + d + " -> b n (h " + d + ")";
}

// 14: mix the heads.
void plan_output(Planner& p) {
    const Sizes& s = p.s;
    p.add(StepKind::OutputProject, 14, "project", "output",
          "output = concat @ W_o.T" + bias_suffix(p.spec.bias.o, "b_o"), {"B", "N", "d_model"},
          Layout::contiguous_of({s.batch, s.seq_len, s.d_model}),
          macs_of({s.batch, s.seq_len, s.d_model, s.value_inner()}))
        .facts.value_heads = s.d_v() != s.d_k();
}

// "Q_1 = x @ W_q[8:16].T + b_q[8:16]": head i's projection from its rows of the weight.
std::string slice_projection(const std::string& out, const std::string& x, const std::string& w,
                             const std::string& b, bool bias, std::size_t first,
                             std::size_t count) {
    const std::string rows =
        "[" + std::to_string(first) + ":" + std::to_string(first + count) + "]";
    return out + " = " + x + " @ " + w + rows + ".T" + bias_suffix(bias, b + rows);
}

// Head i of the per-head form: 1-3 on its slices, then 6-10 as (B, N, M) and (B, N, d_k).
void plan_one_head(Planner& p, std::size_t i) {
    const Sizes& s = p.s;
    const std::size_t B = s.batch, N = s.seq_len, M = s.kv_len, d_k = s.d_k();
    const std::size_t g = kv_head_of(i, s.heads, s.kv_heads);
    const bool self = p.spec.self_attention;
    const std::string id = std::to_string(i);
    const Layout q = Layout::contiguous_of({B, N, d_k}), kv = Layout::contiguous_of({B, M, d_k});
    p.add(
        Operand::Q, StepKind::Project, 1, "project", "Q_" + id,
        slice_projection("Q_" + id, query_name(p.spec), "W_q", "b_q", p.spec.bias.q, i * d_k, d_k),
        {"B", "N", "d_k"}, q, macs_of({B, N, d_k, s.d_model}));
    Step& k = p.add(
        Operand::K, StepKind::Project, 2, "project", "K_" + id,
        slice_projection("K_" + id, self ? "x" : "x_k", "W_k", "b_k", p.spec.bias.k, g * d_k, d_k),
        {"B", "M", "d_k"}, kv, macs_of({B, M, d_k, s.kdim}));
    if (s.kv_heads != s.heads) k.facts.reads_kv_head = std::make_pair(i, g);
    p.add(
        Operand::V, StepKind::Project, 3, "project", "V_" + id,
        slice_projection("V_" + id, self ? "x" : "x_v", "W_v", "b_v", p.spec.bias.v, g * d_k, d_k),
        {"B", "M", "d_k"}, kv, macs_of({B, M, d_k, s.vdim}));
    plan_position(p, q, kv, {"B", "N", "d_k"}, {"B", "M", "d_k"}, "Q_" + id, "K_" + id);
    const std::string scaled = scale_suffix(p.spec);
    if (p.spec.path == AttentionPath::Streaming) {
        mask_facts(p.spec, p.add(StepKind::Attend, 10, "attend", "head_" + id,
                                 "head_" + id + " = " +
                                     applied(p.spec, "Q_" + id + " @ K_" + id + ".T" + scaled +
                                                         " + mask") +
                                     " @ V_" + id + ", streamed",
                                 {"B", "N", "d_k"}, q, macs_of({2, B, N, M, d_k}))
                               .facts);
        return;
    }
    const Layout scores = Layout::contiguous_of({B, N, M});
    p.add(StepKind::Scores, 6, "scores", "scores_" + id,
          "scores_" + id + " = Q_" + id + " @ K_" + id + ".T", {"B", "N", "M"}, scores,
          macs_of({B, N, M, d_k}));
    const Normaliser& normaliser = normaliser_of(p.spec.masks);
    StepFacts& facts = p.add(StepKind::Softmax, 9, normaliser.name, "weights_" + id,
                             "weights_" + id + " = " +
                                 normaliser.applied("scores_" + id + scaled + " + mask"),
                             {"B", "N", "M"}, scores)
                           .facts;
    mask_facts(p.spec, facts);
    facts.normaliser = &normaliser;
    p.add(StepKind::Context, 10, "context", "head_" + id,
          "head_" + id + " = weights_" + id + " @ V_" + id, {"B", "N", "d_k"}, q,
          macs_of({B, N, M, d_k}));
}

// The per-head form: every head, then 13 the concatenation (a copy) and 14.
void plan_per_head(Planner& p) {
    const Sizes& s = p.s;
    for (std::size_t i = 0; i < s.heads; ++i) plan_one_head(p, i);
    Step& concat =
        p.add(StepKind::Concat, 13, "concat", "concat",
              "concat = torch.cat([head_0, ..., head_" + std::to_string(s.heads - 1) + "], dim=-1)",
              {"B", "N", q_width_name(s)}, Layout::contiguous_of({s.batch, s.seq_len, s.inner()}));
    concat.copied_bytes =
        checked_product({s.batch, s.seq_len, s.inner(), sizeof(float)}, "the copy");
    concat.einops = "h b n d -> b n (h d)";  // rearrange of the list of heads, stacked first
    plan_output(p);
}

// Token t of T in the decode form: the cache, attention over it, the output row.
void plan_token(Planner& p, std::size_t t) {
    const Sizes& s = p.s;
    const std::size_t B = s.batch, T = s.seq_len, E = s.d_model, h = s.heads, G = s.kv_heads;
    const std::size_t d_k = s.d_k(), length = t + 1;
    const Layout cache = Layout::contiguous_of({B, G, T, d_k});
    TokenFacts& token =
        p.add(StepKind::Cache, 2, "cache", "K_cache",
              "K_cache[:, :, " + std::to_string(t) + "] = x_t @ W_k.T" +
                  bias_suffix(p.spec.bias.k, "b_k"),
              {"B", G == h ? "h" : "G", "t", "d_k"}, {{B, G, length, d_k}, cache.strides},
              macs_of({B, h * d_k + 2 * G * d_k, E}))
            .facts.token.emplace(token_facts(s, t));
    token.qk_norm = p.spec.qk_norm;
    token.rope = p.spec.rope.has_value();
    if (p.spec.masks.window > 0) token.window = window_facts(p.spec.masks, s, length);
    const std::string scaled = scale_suffix(p.spec);
    const bool streamed = p.spec.path == AttentionPath::Streaming;
    Step& attend =
        streamed
            ? p.add(StepKind::Attend, 10, "attend", "context",
                    "context = " + applied(p.spec, "q_t @ K_cache.mT" + scaled) +
                        " @ V_cache, streamed",
                    {"B", "h", "N", "d_k"}, Layout::contiguous_of({B, 1, h, d_k}).transpose(1, 2),
                    macs_of({2, B, h, length, d_k}))
            : p.add(StepKind::Softmax, 9, normaliser_of(p.spec.masks).name, "weights",
                    "weights = " + applied(p.spec, "q_t @ K_cache.mT" + scaled),
                    {"B", "h", "N", "t"},
                    Layout::contiguous_of({B, h, 1, length}), macs_of({B, h, length, d_k}));
    token_attend_facts(p.spec, t, attend.facts);
    if (!streamed) attend.facts.normaliser = &normaliser_of(p.spec.masks);
    p.add(StepKind::OutputProject, 14, "project", "out_t",
          (streamed
               ? "out_t = context.transpose(1, 2).reshape(B, N, " + q_width_name(s) + ") @ W_o.T"
               : "out_t = (weights @ V_cache).view(B, N, " + q_width_name(s) + ") @ W_o.T") +
              bias_suffix(p.spec.bias.o, "b_o"),
          {"B", "N", "d_model"}, Layout::contiguous_of({B, 1, E}),
          checked_sum({streamed ? 0 : macs_of({B, h, length, d_k}), macs_of({B, E, h * d_k})},
                      "the multiply-adds"))
        .facts.token = token_facts(s, t);
}

// The MLA form's steps 1-5: the projections, the cached latent and RoPE key, the keys and
// values up-projected from the latent, and each head's Q, K and V put together, then the
// shared steps 6-14 run on them.
void plan_mla_heads(Planner& p) {
    const Sizes& s = p.s;
    const MlaSizes& m = *p.spec.mla;
    const std::size_t B = s.batch, N = s.seq_len, E = s.d_model, h = m.heads;
    const std::size_t d_h = m.d_nope, d_R = m.d_rope, d_c = m.d_latent, d_v = m.d_v;
    const MlaFacts facts{h, d_h, d_R, d_c, d_v, N, ledger_kv_heads(h), false, false, std::nullopt};
    p.add(Operand::Q, StepKind::Project, 1, "project", "Q",
          "Q = x @ q_proj.T  (per head [q_nope, q_pe])", {"B", "N", "h·(d_h+d_R)"},
          Layout::contiguous_of({B, N, h * (d_h + d_R)}), macs_of({B, N, h * (d_h + d_R), E}));
    p.add(StepKind::LatentProject, 2, "project", "kv_a",
          "c_kv, k_pe = (x @ kv_a_proj_with_mqa.T).split([d_c, d_R], -1)", {"B", "N", "d_c+d_R"},
          Layout::contiguous_of({B, N, d_c + d_R}), macs_of({B, N, d_c + d_R, E}));
    Step& cache = p.add(StepKind::LatentNorm, 2, "rms_norm", "c_kv", "c_kv = kv_a_layernorm(c_kv)",
                        {"B", "N", "d_c"}, Layout::contiguous_of({B, N, d_c}));
    cache.facts.mla = facts;
    cache.facts.mla->ledger = true;
    p.add(StepKind::LatentUp, 3, "project", "kv",
          "k_nope, V = (c_kv @ kv_b_proj.T).view(B, N, h, d_h+d_v).split([d_h, d_v], -1)",
          {"B", "N", "h·(d_h+d_v)"}, Layout::contiguous_of({B, N, h * (d_h + d_v)}),
          macs_of({B, N, h * (d_h + d_v), d_c}))
        .facts.mla = facts;
    Step& rope_step = p.add(StepKind::Rope, 5, "rope", "k_pe",
                            "k_pe = rope(k_pe); q_pe = rope(q_pe) in every head", {"B", "N", "d_R"},
                            Layout::contiguous_of({B, N, d_R}));
    if (p.spec.rope) {
        Sizes rope_sizes = s;  // the RoPE part is d_R wide: the angles of its pairs
        rope_sizes.head_dim = d_R;
        rope_step.facts.rope = rope_facts(*p.spec.rope, rope_sizes);
    }
    const Layout qk = Layout::contiguous_of({B, h, N, d_h + d_R});
    const Layout v = Layout::contiguous_of({B, h, N, d_v});
    const auto joined = [&](Operand operand, std::string tensor, std::string expression,
                            const Layout& layout, const std::string& width, std::string einops) {
        Step& step = p.add(operand, StepKind::AssembleHeads, 5, "cat", std::move(tensor),
                           std::move(expression), {"B", "h", "N", width}, layout);
        step.copied_bytes = macs_of({B, h, N, layout.shape[3], sizeof(float)});
        step.einops = std::move(einops);
    };
    joined(Operand::Q, "Q", "Q = cat([q_nope, q_pe], -1).transpose(1, 2)", qk, "d_k",
           "pack 'b n h *', then b n h d -> b h n d");
    joined(Operand::K, "K", "K = cat([k_nope, k_pe.expand(B, N, h, d_R)], -1).transpose(1, 2)", qk,
           "d_k", "repeat b n r -> b n h r, pack 'b n h *', then b n h d -> b h n d");
    joined(Operand::V, "V", "V = V.transpose(1, 2).contiguous()", v, v_dim_name(s),
           s.d_v() == s.d_k() ? "b n h d -> b h n d" : "b n h dv -> b h n dv");
}

// MLA's cross-check after step 14: the absorbed form's weights (standard path) and output,
// computed through the same shared steps and compared with the pass's.
void plan_mla_absorbed(Planner& p) {
    const Sizes& s = p.s;
    const MlaSizes& m = *p.spec.mla;
    const std::size_t B = s.batch, N = s.seq_len, E = s.d_model, h = m.heads;
    const std::size_t d_h = m.d_nope, d_R = m.d_rope, d_c = m.d_latent, d_v = m.d_v;
    MlaFacts facts{h, d_h, d_R, d_c, d_v, N, ledger_kv_heads(h), false, true, std::nullopt};
    const auto sum = [](std::initializer_list<std::uint64_t> terms) {
        return checked_sum(terms, "the multiply-adds");
    };
    const std::uint64_t queries = macs_of({B, h, N, d_h, d_c});     // q_nope @ W_UK
    const std::uint64_t scores = macs_of({B, h, N, N, d_c + d_R});  // 6
    const std::uint64_t context = macs_of({B, h, N, N, d_c});       // 10
    const std::uint64_t output = sum({macs_of({B, N, E, h * d_c}),  // 14
                                      macs_of({E, h, d_v, d_c})});  // W_UV folded into W_o
    const bool standard = p.spec.path == AttentionPath::Standard;
    if (standard) {
        p.add(StepKind::AbsorbedWeights, 9, normaliser_of(p.spec.masks).name, "weights_absorbed",
              "weights = " + applied(p.spec, "((q_nope @ W_UK) @ c_kv.mT + q_pe @ k_pe.mT)" +
                                                 scale_suffix(p.spec) + " + mask"),
              {"B", "h", "N", "N"}, Layout::contiguous_of({B, h, N, N}), sum({queries, scores}))
            .facts.mla = facts;
    }
    p.add(StepKind::AbsorbedOutput, 14, "project", "output_absorbed",
          "output = cat_h(weights @ c_kv) @ (o_proj.weight · W_UV per head).T",
          {"B", "N", "d_model"}, Layout::contiguous_of({B, N, E}),
          standard ? sum({context, output}) : sum({queries, scores, context, output}))
        .facts.mla = facts;
}

// "out = norm1(in)": a LayerNorm and its gamma and beta.
void plan_norm(Planner& p, int number, const std::string& out, const std::string& norm,
               const std::string& in) {
    p.add(StepKind::Norm, number, "layer_norm", out, out + " = " + norm + "(" + in + ")",
          model_dims, model_layout(p.s))
        .facts.parameters = 2 * std::uint64_t(p.s.d_model);
}

// "out = a + b": a residual sum.
void plan_residual(Planner& p, int number, const std::string& out, const std::string& a,
                   const std::string& b) {
    p.add(StepKind::Residual, number, "residual", out, out + " = " + a + " + " + b, model_dims,
          model_layout(p.s));
}

// FFN(in) = GELU(in W_1ᵀ + b_1) W_2ᵀ + b_2 as steps first..first+2:
// (B, N, d_model) -> (B, N, d_ff) -> (B, N, d_model)
void plan_feed_forward(Planner& p, int first, const std::string& in) {
    const Sizes& s = p.s;
    const std::uint64_t E = s.d_model, F = p.spec.block->d_ff, macs = ffn_macs(p);
    const Layout hidden = hidden_layout(p);
    p.add(StepKind::FfnIn, first, "linear1", "ffn_hidden", "ffn_hidden = " + in + " @ W_1.T + b_1",
          hidden_dims, hidden, macs)
        .facts.parameters = checked_sum({macs_of({F, E}), F}, "the parameter count");
    p.add(StepKind::Gelu, first + 1, "gelu", "ffn_hidden", "F.gelu(ffn_hidden)", hidden_dims,
          hidden);
    p.add(StepKind::FfnOut, first + 2, "linear2", "ffn", "ffn = F.gelu(ffn_hidden) @ W_2.T + b_2",
          model_dims, model_layout(s), macs)
        .facts.parameters = checked_sum({macs_of({E, F}), E}, "the parameter count");
}

// Steps 0-14 of the form.
void plan_attention(Planner& p) {
    const PassSpec& spec = p.spec;
    plan_inputs(p);
    if (spec.form == Form::PerHead) {
        plan_per_head(p);
    } else if (spec.form == Form::Decode) {
        for (std::size_t t = 0; t < spec.sizes.seq_len; ++t) plan_token(p, t);
    } else {
        if (spec.form == Form::Mla) {
            plan_mla_heads(p);
        } else if (spec.form == Form::FusedQkv) {
            plan_fused_project_split(p);
        } else {
            plan_project_split(p);
        }
        plan_combine(p, spec.path == AttentionPath::Streaming ? plan_attend_streamed(p)
                                                              : plan_attend_standard(p));
        plan_output(p);
        if (spec.form == Form::Mla) plan_mla_absorbed(p);
    }
}

// The pass, inside its block when there is one, in execution order (pre-LN's first norm, 15,
// runs before attention):
//   pre:  15 x_norm = norm1(x), 0-14, 16 h = x + attention, 17 h_norm = norm2(h),
//         18-20 the feed-forward, 21 out = h + ffn
//   post: 0-14, 15 h = x + attention, 16 h = norm1(h), 17-19 the feed-forward,
//         20 out = h + ffn, 21 out = norm2(out)
void plan_block(Planner& p) {
    if (!p.spec.block) return plan_attention(p);
    if (p.spec.block->kind == BlockKind::Pre) {
        plan_norm(p, 15, "x_norm", "norm1", "x");
        plan_attention(p);
        plan_residual(p, 16, "h", "x", "attention");
        plan_norm(p, 17, "h_norm", "norm2", "h");
        plan_feed_forward(p, 18, "h_norm");
        plan_residual(p, 21, "out", "h", "ffn");
        return;
    }
    plan_attention(p);
    plan_residual(p, 15, "h", "x", "attention");
    plan_norm(p, 16, "h", "norm1", "h");
    plan_feed_forward(p, 17, "h");
    plan_residual(p, 20, "out", "h", "ffn");
    plan_norm(p, 21, "out", "norm2", "out");
}

}  // namespace

float score_factor(double base, bool scaled) {
    return scaled ? float(1.0 / std::sqrt(base)) : 1.0f;
}

double scale_base_of(const Sizes& s, double scale_base) {
    return scale_base > 0 ? scale_base : double(s.d_k());
}

std::vector<Step> plan_pass(const PassSpec& spec) {
    Planner p(spec);
    plan_block(p);
    if (spec.backward) {
        p.backward = true;
        if (spec.block) plan_block_backward_head(p);
        plan_backward(p);
        if (spec.block) plan_block_backward_tail(p);
    }
    return std::move(p.steps);
}

std::vector<Step> plan_model(const ModelSpec& spec) {
    Planner p(spec.layer);
    const Sizes& s = p.s;
    p.add(StepKind::Embed, 0, "embed", "x", "x = token_embedding[t] + position_embedding[:N]",
          model_dims, model_layout(s));
    for (std::size_t l = 0; l < spec.layers; ++l) {
        if (l == spec.traced) {
            plan_block(p);
        } else {
            p.add(StepKind::Layer, 0, "block", "x", "x = layers[" + std::to_string(l) + "](x)",
                  model_dims, model_layout(s));
        }
    }
    plan_norm(p, 22, "x_final", "norm", "x");
    p.add(StepKind::Logits, 23, "project", "logits", "logits = x_final @ lm_head.T + b",
          {"B", "N", "V"}, Layout::contiguous_of({s.batch, s.seq_len, spec.vocab}),
          macs_of({s.batch, s.seq_len, spec.vocab, s.d_model}));
    if (spec.backward) {
        p.backward = true;
        plan_model_backward(p, spec);
    }
    return std::move(p.steps);
}

std::uint64_t planned_macs(const std::vector<Step>& steps) {
    std::uint64_t total = 0;
    for (const Step& step : steps) total = checked_sum({total, step.macs}, "the multiply-adds");
    return total;
}

std::uint64_t parameter_count(const Sizes& s, bool bias) {
    const std::string what = "the parameter count";
    const std::uint64_t E = s.d_model, kv = std::uint64_t(s.kv_heads) * s.d_k();
    const std::uint64_t weights =
        checked_sum({checked_product({2, E, s.inner()}, what),
                     checked_product({kv, checked_sum({s.kdim, s.vdim}, what)}, what)},
                    what);
    return checked_sum({weights, bias ? s.inner() + E + 2 * kv : 0}, what);
}

}  // namespace mha
