// The backward's steps, planned from the sizes alone after the forward's: each step numbered
// by the forward step it undoes (b14 first, b0 last), with its PyTorch expression, layout and
// multiply-adds. core/backward/backward.cpp computes them in this order.
//
//   b14  dW_o = dOutᵀ concat, db_o = Σ dOut, dconcat = dOut W_o
//   b13  dconcat.view(B, N, h, d_v);  b11  dO_h = .transpose(1, 2)       (B, h, N, d_v)
//   b10  dV = Pᵀ dO_h (summed over each K/V head's query heads), dP = dO_h Vᵀ
//   b9   D = rowsum(dO_h ∘ O_h), dS = P ∘ (dP − D);  b8 the mask;  b7 the scale (and soft-cap)
//   b6   dQ = dscores K, dK = dscoresᵀ Q (summed per K/V head);  b5 RoPE, QK-norm back
//   b5-4 the heads side by side again;  b3 the appended rows;  b1-3 dW, db, dx;  b0 dx summed

#include <string>

#include "core/checked.h"
#include "core/pass/planner.h"
#include "core/pass/score_rules.h"

namespace mha {

namespace {

// The bytes of a copy of `layout`'s elements when it is not contiguous, else 0.
std::uint64_t copy_bytes(const Layout& layout) {
    if (layout.is_contiguous()) return 0;
    return checked_product({element_count(layout.shape), sizeof(float)}, "the copy");
}

// b14 (and every projection): dW = dYᵀ X, db = Σ dY, dX = dY W for y = x Wᵀ + b over `rows`
// rows. Names: "o" gives dW_o, db_o; the input gradient is dx_name.
void plan_linear(Planner& p, Operand operand, int number, const std::string& w,
                 const std::string& b, bool bias, const std::string& dy, const std::string& x,
                 const std::string& dx, const Dims& dx_dims, const Layout& dx_layout,
                 std::uint64_t rows, std::uint64_t out, std::uint64_t in, const Dims& w_dims) {
    const std::uint64_t macs = macs_of({rows, out, in});
    p.add(operand, StepKind::WeightGrad, number, "grad", "d" + w,
          "d" + w + " = " + dy + ".T @ " + x + "  (summed over B and the positions)", w_dims,
          Layout::contiguous_of({out, in}), macs);
    if (bias) {
        p.add(operand, StepKind::BiasGrad, number, "grad", "d" + b,
              "d" + b + " = " + dy + ".sum((0, 1))", {w_dims.front()},
              Layout::contiguous_of({out}));
    }
    p.add(operand, StepKind::InputGrad, number, "grad", dx, dx + " = " + dy + " @ " + w, dx_dims,
          dx_layout, macs);
}

// b14's start: the gradient at attention's output, the block's (plan_block_backward_head) when
// attention sits in one.
std::string grad_output_expression(const PassSpec& spec) {
    if (!spec.block) return "dOut = output.grad  (L = (output * dOut).sum())";
    return spec.block->kind == BlockKind::Pre
               ? "dOut = dh  (attention's output feeds h = x + attention)"
               : "dOut = dsum  (attention's output feeds x + attention)";
}

// b14-b11: W_o's gradients, then dconcat split back into heads (B, h, N, d_v), a view.
void plan_output_back(Planner& p) {
    const Sizes& s = p.s;
    const std::size_t B = s.batch, N = s.seq_len, E = s.d_model, h = s.heads, d_v = s.d_v();
    const Layout out = Layout::contiguous_of({B, N, E});
    p.add(StepKind::GradOutput, 14, "grad", "dOut", grad_output_expression(p.spec),
          {"B", "N", "d_model"}, out);
    const std::string width = concat_width_name(s);
    const Layout concat = Layout::contiguous_of({B, N, h * d_v});
    plan_linear(p, Operand::None, 14, "W_o", "b_o", p.spec.bias.o, "dOut", "concat", "dconcat",
                {"B", "N", width}, concat, B * N, E, h * d_v, {"d_model", width});
    const Layout split = concat.view({B, N, h, d_v});
    const std::string dv = v_dim_name(s);
    p.add(StepKind::SplitHeads, 13, "view", "dconcat", "dconcat.view(B, N, h, " + dv + ")",
          {"B", "N", "h", dv}, split);
    p.add(StepKind::MergeHeads, 11, "transpose", "dO_h", "dO_h = dconcat.transpose(1, 2)",
          {"B", "h", "N", dv}, split.transpose(1, 2));
}

// A GQA group sum: the (B, h, L, width) per-query-head gradient into (B, G, L, width).
void plan_group_sum(Planner& p, Operand operand, int number, const std::string& name,
                    const std::string& length, const std::string& width, std::size_t L,
                    std::size_t w) {
    const Sizes& s = p.s;
    if (s.kv_heads == s.heads) return;
    p.add(operand, StepKind::GroupSum, number, "sum", name,
          name + " = " + name + ".view(B, G, h/G, " + length + ", " + width + ").sum(2)",
          {"B", "G", length, width}, Layout::contiguous_of({s.batch, s.kv_heads, L, w}))
        .facts.summed_heads = s.heads / s.kv_heads;
}

// b10-b6 on the standard path: the products, the softmax, the mask, the scale.
void plan_attend_back(Planner& p) {
    const Sizes& s = p.s;
    const std::size_t B = s.batch, N = s.seq_len, M = s.kv_len, h = s.heads, d_k = s.d_k();
    const std::size_t d_v = s.d_v();
    const std::string dv = v_dim_name(s);
    const Dims grid = {"B", "h", "N", "M"};
    const Layout scores = Layout::contiguous_of({B, h, N, M});
    p.add(Operand::V, StepKind::ValueGrad, 10, "grad", "dV", "dV = P.transpose(-2, -1) @ dO_h",
          {"B", "h", "M", dv}, Layout::contiguous_of({B, h, M, d_v}), macs_of({B, h, N, M, d_v}));
    plan_group_sum(p, Operand::V, 10, "dV", "M", dv, M, d_v);
    p.add(StepKind::WeightsGrad, 10, "grad", "dP", "dP = dO_h @ V.transpose(-2, -1)", grid, scores,
          macs_of({B, h, N, M, d_v}));
    const Masks& masks = p.spec.masks;
    const Normaliser& normaliser = normaliser_of(masks);
    if (normaliser.row_dot) {
        p.add(StepKind::RowDot, 9, "grad", "D", "D = (dO_h * O_h).sum(-1)", {"B", "h", "N"},
              Layout::contiguous_of({B, h, N}), macs_of({B, h, N, d_v}));
    }
    p.add(StepKind::SoftmaxGrad, 9, "grad", "dS", normaliser.backward, grid, scores,
          macs_of({B, h, N, M}))
        .facts.normaliser = &normaliser;
    const bool blocks =
        masks.has_attn_mask() || masks.has_key_padding() || masks.causal || masks.window > 0;
    p.add(StepKind::MaskGrad, 8, "grad", "dS",
          blocks ? "dS  (the mask is a constant; blocked keys: P = 0, so dS = 0)"
                 : "dS  (the mask is a constant: unchanged)",
          grid, scores)
        .facts.blocked_zero_gradient = blocks;
    std::string expression = "dscores = dS";
    if (masks.softcap > 0) expression += " * (1 - torch.tanh(scores / softcap)**2)";
    if (p.spec.scale) {
        expression +=
            p.spec.scale_base > 0 ? " / math.sqrt(query_pre_attn_scalar)" : " / math.sqrt(d_k)";
    }
    Step& s7 = p.add(StepKind::ScaleGrad, 7, "grad", "dscores", expression, grid, scores,
                     masks.softcap > 0 ? macs_of({B, h, N, M}) : 0);
    if (p.spec.scale)
        s7.facts.scale_factor = score_factor(scale_base_of(s, p.spec.scale_base), true);
    if (masks.softcap > 0) s7.facts.softcap = masks.softcap;
    p.add(Operand::Q, StepKind::QueryGrad, 6, "grad", "dQ", "dQ = dscores @ K",
          {"B", "h", "N", "d_k"}, Layout::contiguous_of({B, h, N, d_k}),
          macs_of({B, h, N, M, d_k}));
    p.add(Operand::K, StepKind::KeyGrad, 6, "grad", "dK", "dK = dscores.transpose(-2, -1) @ Q",
          {"B", "h", "M", "d_k"}, Layout::contiguous_of({B, h, M, d_k}),
          macs_of({B, h, N, M, d_k}));
    plan_group_sum(p, Operand::K, 6, "dK", "M", "d_k", M, d_k);
}

// b10-b6 on the streaming path: one pass per unit over tiles of keys and queries yields dQ, dK
// and dV (per query head), recomputing P from the row log-sum-exp; no (N, M) tensor.
void plan_attend_back_streamed(Planner& p) {
    const Sizes& s = p.s;
    const std::size_t B = s.batch, N = s.seq_len, M = s.kv_len, h = s.heads, d_k = s.d_k();
    const std::size_t d_v = s.d_v();
    const std::string dv = v_dim_name(s);
    p.add(Operand::Q, StepKind::AttendGrad, 10, "attend-grad", "dQ",
          "dQ, dK, dV = flash_attention_backward(Q, K, V, O_h, lse, dO_h)  (per tile: "
          "P = exp(scores - lse), dS = P * (dP - D); S and dP recomputed)",
          {"B", "h", "N", "d_k"}, Layout::contiguous_of({B, h, N, d_k}),
          macs_of({B, h, N, M, 2 * d_k + d_v}));  // S = Q Kᵀ, dP = dO_h Vᵀ, dQ = dS K
    p.add(Operand::K, StepKind::AttendGrad, 10, "attend-grad", "dK",
          "dK  (the same pass: dK += dS.T @ Q per tile)", {"B", "h", "M", "d_k"},
          Layout::contiguous_of({B, h, M, d_k}), macs_of({B, h, N, M, d_k}));
    p.add(Operand::V, StepKind::AttendGrad, 10, "attend-grad", "dV",
          "dV  (the same pass: dV += P.T @ dO_h per tile)", {"B", "h", "M", dv},
          Layout::contiguous_of({B, h, M, d_v}), macs_of({B, h, N, M, d_v}));
    plan_group_sum(p, Operand::K, 6, "dK", "M", "d_k", M, d_k);
    plan_group_sum(p, Operand::V, 10, "dV", "M", dv, M, d_v);
}

// b5: RoPE rotated back (the opposite angle), then QK-norm's backward with d q_norm, d k_norm.
void plan_position_back(Planner& p) {
    const Sizes& s = p.s;
    const std::size_t B = s.batch, N = s.seq_len, M = s.kv_len, d_k = s.d_k();
    const std::string g = s.kv_heads == s.heads ? "h" : "G";
    const Layout q = Layout::contiguous_of({B, s.heads, N, d_k}),
                 k = Layout::contiguous_of({B, s.kv_heads, M, d_k});
    const Dims q_dims = {"B", "h", "N", "d_k"}, k_dims = {"B", g, "M", "d_k"};
    if (p.spec.rope) {
        const bool half = p.spec.rope->layout == RopeLayout::Half;
        const auto back = [half](const std::string& x) {
            return half ? x + " = " + x + " * cos - rotate_half(" + x + ") * sin"
                        : x + " = apply_rotary_emb(" + x + ", freqs_cis.conj())";
        };
        p.add(Operand::Q, StepKind::Rope, 5, "rope", "dQ", back("dQ"), q_dims, q);
        p.add(Operand::K, StepKind::Rope, 5, "rope", "dK", back("dK"), k_dims, k);
    }
    if (!p.spec.qk_norm) return;
    for (const std::string x : {"Q", "K"}) {
        const Operand operand = x == "Q" ? Operand::Q : Operand::K;
        const std::string norm = x == "Q" ? "q_norm" : "k_norm";
        p.add(operand, StepKind::QkNorm, 5, "qk-norm", "d" + x,
              "d" + x + " = (" + norm + " * d" + x + " - " + x + "_n * (" + norm + " * d" + x +
                  " * " + x + "_n).mean(-1, keepdim=True)) / rms(" + x + ")",
              x == "Q" ? q_dims : k_dims, x == "Q" ? q : k);
        p.add(operand, StepKind::WeightGrad, 5, "grad", "d" + norm,
              "d" + norm + " = (d" + x + "_n * " + x + "_n).sum((0, 1, 2))", {"d_k"},
              Layout::contiguous_of({d_k}));
    }
}

// What attention read: x_norm = norm1(x) inside a pre-LN block, else its query input.
std::string attention_input_name(const PassSpec& spec) {
    return spec.block && spec.block->kind == BlockKind::Pre ? "x_norm" : query_name(spec);
}

// b5-b4 packed: each gradient's heads side by side again, (B, L, heads·width), a copy.
Layout plan_heads_back(Planner& p, Operand operand, const std::string& name,
                       const std::string& length, const std::string& heads,
                       const std::string& width, const std::string& flat, std::size_t L,
                       std::size_t H, std::size_t w) {
    const Layout moved = Layout::contiguous_of({p.s.batch, H, L, w}).transpose(1, 2);
    p.add(operand, StepKind::MoveHeads, 5, "transpose", name, name + ".transpose(1, 2)",
          {"B", length, heads, width}, moved);
    const Layout joined = moved.contiguous().view({p.s.batch, L, H * w});
    p.add(operand, StepKind::SplitHeads, 4, "reshape", name,
          name + " = " + name + ".transpose(1, 2).reshape(B, " + length + ", " + flat + ")",
          {"B", length, flat}, joined)
        .copied_bytes = copy_bytes(moved);
    return joined;
}

// b3: the appended rows' gradients (d bias_k, d bias_v) and K's and V's own M_in rows.
void plan_append_back(Planner& p) {
    const Sizes& s = p.s;
    const AppendedKv& a = p.spec.appended;
    if (a.count() == 0) return;
    const std::size_t B = s.batch, M = s.kv_len, M_in = M - a.count(), W = s.kv_heads * s.d_k();
    const std::string width = s.kv_heads == s.heads ? "d_model" : "G·d_k";
    for (const std::string x : {"K", "V"}) {
        const Operand operand = x == "K" ? Operand::K : Operand::V;
        const std::string bias = x == "K" ? "bias_k" : "bias_v";
        if (a.bias_kv) {
            p.add(operand, StepKind::AppendGrad, 3, "grad", "d" + bias,
                  "d" + bias + " = d" + x + "[:, " + std::to_string(M_in) + "].sum(0)", {width},
                  Layout::contiguous_of({W}));
        }
        Step& own = p.add(operand, StepKind::AppendGrad, 3, "slice", "d" + x,
                          "d" + x + " = d" + x + "[:, :" + std::to_string(M_in) + "]",
                          {"B", "M", width}, Layout::contiguous_of({B, M_in, W}));
        own.copied_bytes = checked_product({B, M_in, W, sizeof(float)}, "the copy");
        own.facts.appended = AppendedFacts{M_in, M, a.bias_kv, a.zero_attn};
    }
}

// Per-head: the rows of dW (heads·d_k, in) that head i's (or K/V head i's) slice W[i] got.
void plan_head_rows(Planner& p, Operand operand, const std::string& w, const std::string& dy,
                    std::size_t heads, std::size_t in, const std::string& in_name) {
    if (p.spec.form != Form::PerHead) return;
    const std::size_t d_k = p.s.d_k();
    const Layout rows = Layout::contiguous_of({heads, d_k, in}).select(0);
    for (std::size_t i = 0; i < heads; ++i) {
        const std::string id = std::to_string(i);
        const std::string range =
            "[" + std::to_string(i * d_k) + ":" + std::to_string((i + 1) * d_k) + "]";
        p.add(operand, StepKind::WeightGrad,
              operand == Operand::Q   ? 1
              : operand == Operand::K ? 2
                                      : 3,
              "grad", "d" + w + range,
              "d" + w + range + " = " + dy + "_" + id + ".T @ " + in_name + "  (head " + id +
                  "'s rows)",
              {"d_k", in == p.s.d_model  ? "d_model"
                      : in_name == "x_k" ? "kdim"
                                         : "vdim"},
              rows);
    }
}

// b5-b1 packed: heads back, the appended rows, then W_q, W_k and W_v's gradients and dx.
void plan_project_back(Planner& p) {
    const Sizes& s = p.s;
    const std::size_t B = s.batch, N = s.seq_len, M = s.kv_len, E = s.d_model, h = s.heads;
    const std::size_t G = s.kv_heads, d_k = s.d_k(), M_in = M - p.spec.appended.count();
    const bool self = p.spec.self_attention;
    const std::string g = G == h ? "h" : "G", kv_width = G == h ? "d_model" : "G·d_k";
    const std::string qw = q_width_name(s);
    plan_heads_back(p, Operand::Q, "dQ", "N", "h", "d_k", qw, N, h, d_k);
    plan_heads_back(p, Operand::K, "dK", "M", g, "d_k", kv_width, M, G, d_k);
    plan_heads_back(p, Operand::V, "dV", "M", g, "d_k", kv_width, M, G, d_k);
    plan_append_back(p);
    const std::string x = attention_input_name(p.spec);
    const std::string xq = x, xk = self ? x : "x_k", xv = self ? x : "x_v";
    const std::string kdim = s.kdim == E ? "d_model" : "kdim",
                      vdim = s.vdim == E ? "d_model" : "vdim";
    plan_linear(p, Operand::Q, 1, "W_q", "b_q", p.spec.bias.q, "dQ", xq, "dx_q",
                {"B", "N", "d_model"}, Layout::contiguous_of({B, N, E}), B * N, h * d_k, E,
                {qw, "d_model"});
    plan_head_rows(p, Operand::Q, "W_q", "dQ", h, E, xq);
    plan_linear(p, Operand::K, 2, "W_k", "b_k", p.spec.bias.k, "dK", xk, "dx_k", {"B", "M", kdim},
                Layout::contiguous_of({B, M_in, s.kdim}), B * M_in, G * d_k, s.kdim,
                {kv_width, kdim});
    plan_head_rows(p, Operand::K, "W_k", "dK", G, s.kdim, xk);
    plan_linear(p, Operand::V, 3, "W_v", "b_v", p.spec.bias.v, "dV", xv, "dx_v", {"B", "M", vdim},
                Layout::contiguous_of({B, M_in, s.vdim}), B * M_in, G * d_k, s.vdim,
                {kv_width, vdim});
    plan_head_rows(p, Operand::V, "W_v", "dV", G, s.vdim, xv);
    if (self) {
        p.add(StepKind::InputSum, 0, "sum", "d" + x, "d" + x + " = dx_q + dx_k + dx_v",
              {"B", "N", "d_model"}, Layout::contiguous_of({B, N, E}));
    }
}

// b5-b1 fused: dQ, dK and dV stacked as dqkv, permuted back, W_qkv's gradients and dx.
void plan_fused_back(Planner& p) {
    const Sizes& s = p.s;
    const std::size_t B = s.batch, N = s.seq_len, E = s.d_model, h = s.heads, d_k = s.d_k();
    const Layout stacked = Layout::contiguous_of({3, B, h, N, d_k});
    p.add(Operand::Qkv, StepKind::Unbind, 5, "stack", "dqkv", "dqkv = torch.stack([dQ, dK, dV])",
          {"qkv", "B", "h", "N", "d_k"}, stacked)
        .copied_bytes = checked_product({3, B, h, N, d_k, sizeof(float)}, "the copy");
    const Layout moved = stacked.permute({1, 3, 0, 2, 4});
    p.add(Operand::Qkv, StepKind::MoveHeads, 5, "permute", "dqkv", "dqkv.permute(1, 3, 0, 2, 4)",
          {"B", "N", "qkv", "h", "d_k"}, moved);
    const std::string width = "3·" + q_width_name(s);
    p.add(Operand::Qkv, StepKind::SplitHeads, 4, "reshape", "dqkv",
          "dqkv = dqkv.permute(1, 3, 0, 2, 4).reshape(B, N, " + width + ")", {"B", "N", width},
          moved.contiguous().view({B, N, 3 * h * d_k}))
        .copied_bytes = copy_bytes(moved);
    const Biases& b = p.spec.bias;
    plan_linear(p, Operand::Qkv, 1, "W_qkv", "b_qkv", b.q || b.k || b.v, "dqkv", "x", "dx",
                {"B", "N", "d_model"}, Layout::contiguous_of({B, N, E}), B * N, 3 * h * d_k, E,
                {width, "d_model"});
}

// b5-b0 of the MLA form: the heads' gradients split into MLA's parts (RoPE rotated back on the
// pe parts, k_pe's summed over the heads that shared it), then kv_b_proj, the latent's RMSNorm,
// kv_a_proj_with_mqa and q_proj differentiated, and x's two paths summed.
void plan_mla_back(Planner& p) {
    const Sizes& s = p.s;
    const MlaSizes& m = *p.spec.mla;
    const std::size_t B = s.batch, N = s.seq_len, E = s.d_model, h = m.heads;
    const std::size_t d_h = m.d_nope, d_R = m.d_rope, d_c = m.d_latent, d_v = m.d_v;
    const bool half = p.spec.rope && p.spec.rope->layout == RopeLayout::Half;
    const auto back = [&](const std::string& x) {
        if (!p.spec.rope) return x;
        return half ? x + " * cos - rotate_half(" + x + ") * sin"
                    : "apply_rotary_emb(" + x + ", freqs_cis.conj())";
    };
    const auto copy = [](const Layout& layout) {
        return checked_product({element_count(layout.shape), sizeof(float)}, "the copy");
    };
    const Layout q_pe = Layout::contiguous_of({B, h, N, d_R});
    p.add(Operand::Q, StepKind::Rope, 5, "rope", "dq_pe", "dq_pe = " + back("dQ[..., d_h:]"),
          {"B", "h", "N", "d_R"}, q_pe)
        .copied_bytes = copy(q_pe);
    const Layout k_pe = Layout::contiguous_of({B, N, d_R});
    p.add(Operand::K, StepKind::AssembleHeads, 5, "sum", "dk_pe",
          "dk_pe = dK[..., d_h:].sum(1)  (k_pe was expanded to every head)", {"B", "N", "d_R"},
          k_pe);
    p.add(Operand::K, StepKind::Rope, 5, "rope", "dk_pe", "dk_pe = " + back("dk_pe"),
          {"B", "N", "d_R"}, k_pe);
    const Layout queries = Layout::contiguous_of({B, N, h * (d_h + d_R)});
    p.add(Operand::Q, StepKind::AssembleHeads, 5, "cat", "dQ",
          "dQ = cat([dQ[..., :d_h], dq_pe], -1).transpose(1, 2).reshape(B, N, h·(d_h+d_R))",
          {"B", "N", "h·(d_h+d_R)"}, queries)
        .copied_bytes = copy(queries);
    const Layout kv = Layout::contiguous_of({B, N, h * (d_h + d_v)});
    p.add(StepKind::AssembleHeads, 5, "cat", "dkv",
          "dkv = cat([dK[..., :d_h], dV], -1).transpose(1, 2).reshape(B, N, h·(d_h+d_v))",
          {"B", "N", "h·(d_h+d_v)"}, kv)
        .copied_bytes = copy(kv);
    const Layout latent = Layout::contiguous_of({B, N, d_c});
    plan_linear(p, Operand::None, 3, "kv_b_proj", "", false, "dkv", "c_kv", "dc_kv",
                {"B", "N", "d_c"}, latent, B * N, h * (d_h + d_v), d_c, {"h·(d_h+d_v)", "d_c"});
    p.add(StepKind::LatentNorm, 2, "rms_norm", "dc_kv",
          "dc_kv = (w * dc_kv - c_n * (w * dc_kv * c_n).mean(-1, keepdim=True)) / rms(c_kv)  "
          "(w = kv_a_layernorm.weight)",
          {"B", "N", "d_c"}, latent);
    p.add(StepKind::WeightGrad, 2, "grad", "dkv_a_layernorm",
          "dkv_a_layernorm = (dc_kv_n * c_n).sum((0, 1))", {"d_c"}, Layout::contiguous_of({d_c}));
    const Layout kv_a = Layout::contiguous_of({B, N, d_c + d_R});
    p.add(StepKind::LatentProject, 2, "cat", "dkv_a", "dkv_a = cat([dc_kv, dk_pe], -1)",
          {"B", "N", "d_c+d_R"}, kv_a)
        .copied_bytes = copy(kv_a);
    const Layout x = Layout::contiguous_of({B, N, E});
    plan_linear(p, Operand::None, 2, "kv_a_proj_with_mqa", "", false, "dkv_a", "x", "dx_kv",
                {"B", "N", "d_model"}, x, B * N, d_c + d_R, E, {"d_c+d_R", "d_model"});
    plan_linear(p, Operand::Q, 1, "q_proj", "", false, "dQ", "x", "dx_q", {"B", "N", "d_model"}, x,
                B * N, h * (d_h + d_R), E, {"h·(d_h+d_R)", "d_model"});
    p.add(StepKind::InputSum, 0, "sum", "dx", "dx = dx_q + dx_kv", {"B", "N", "d_model"}, x);
}

}  // namespace

void plan_backward(Planner& p) {
    plan_output_back(p);
    if (p.spec.path == AttentionPath::Streaming) {
        plan_attend_back_streamed(p);
    } else {
        plan_attend_back(p);
    }
    if (p.spec.form == Form::Mla) return plan_mla_back(p);
    plan_position_back(p);
    if (p.spec.form == Form::FusedQkv) {
        plan_fused_back(p);
    } else {
        plan_project_back(p);
    }
}

}  // namespace mha
