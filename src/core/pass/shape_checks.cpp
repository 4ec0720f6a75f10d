// Whether weights, inputs, masks and options fit together into one pass.

#include "core/pass/shape_checks.h"

#include <string>

#include "core/error.h"
#include "core/pass/score_rules.h"
#include "core/tensor/workspace.h"

namespace mha {

namespace {

std::string shape_error(const std::string& what, const std::string& expected, const Tensor& t) {
    return what + ": expected shape " + expected + ", got " + to_string(t.shape());
}

}  // namespace

void check_head_width(std::size_t d_model, std::size_t width, std::size_t heads) {
    if (heads == 0 || width % heads != 0) {
        throw Error(width == d_model
                        ? "d_model " + std::to_string(d_model) + " is not divisible by heads " +
                              std::to_string(heads) + "; d_k = d_model / h must be a whole number"
                        : "W_q has " + std::to_string(width) +
                              " rows, not h·d_k for h = " + std::to_string(heads));
    }
}

void check_kv_heads(std::size_t heads, std::size_t kv_heads) {
    if (kv_heads == 0 || heads % kv_heads != 0) {
        throw Error(std::to_string(kv_heads) + " key/value heads do not divide " +
                    std::to_string(heads) + " heads; each key/value head serves h / G query heads");
    }
}

void check_form(Form form, const Sizes& s, bool self_attention, const Masks& masks) {
    if (form == Form::Decode &&
        (!self_attention || masks.has_attn_mask() || masks.has_key_padding())) {
        throw Error(
            "decoding is causal self-attention: one sequence attending to itself, "
            "with no attn_mask or key padding mask");
    }
    if (form == Form::FusedQkv &&
        (!self_attention || s.kv_heads != s.heads || s.kdim != s.d_model || s.vdim != s.d_model)) {
        throw Error(
            "the fused QKV projection needs self-attention with K and V as wide as Q "
            "(G = h, kdim = vdim = d_model)");
    }
}

void check_masks(const Masks& masks, const Sizes& s) {
    const std::size_t B = s.batch, N = s.seq_len, M = s.kv_len, heads = s.heads;
    const Tensor& am = masks.attn_mask;
    if (!am.empty()) {
        const bool plane =
            am.dim() >= 2 && am.size(am.dim() - 2) == N && am.size(am.dim() - 1) == M;
        const bool lead =
            am.dim() == 2 || (am.dim() == 3 && (am.size(0) == B || am.size(0) == B * heads));
        if (!plane || !lead) {
            throw Error(shape_error("attn_mask",
                                    to_string({N, M}) + ", " + to_string({B, N, M}) + " or " +
                                        to_string({B * heads, N, M}),
                                    am));
        }
    }
    if (!masks.key_padding.empty() && masks.key_padding.shape() != Shape{B, M}) {
        throw Error(shape_error("key_padding_mask", to_string({B, M}), masks.key_padding));
    }
}

Sizes check_shapes(const Weights& w, const Inputs& in, const Masks& masks, std::size_t heads) {
    const std::size_t E = w.d_model(), inner = w.q_width();
    check_head_width(E, inner, heads);
    if (w.w_o.dim() != 2 || w.w_o.size(0) != E || w.w_o.size(1) != inner) {
        throw Error(shape_error("W_o", "(d_model, h·d_k) = " + to_string({E, inner}), w.w_o));
    }
    if (in.x_q.dim() != 3 || in.x_q.size(2) != E) {
        throw Error(shape_error("query", "(B, N, " + std::to_string(E) + ")", in.x_q));
    }
    const std::size_t B = in.x_q.size(0);
    const std::size_t N = in.x_q.size(1);
    if (in.x_k.dim() != 3 || in.x_k.size(0) != B || in.x_k.size(2) != w.kdim()) {
        throw Error(shape_error(
            "key", "(" + std::to_string(B) + ", M, " + std::to_string(w.kdim()) + ")", in.x_k));
    }
    const std::size_t M = in.x_k.size(1);
    if (in.x_v.dim() != 3 || in.x_v.size(0) != B || in.x_v.size(1) != M ||
        in.x_v.size(2) != w.vdim()) {
        throw Error(shape_error("value", to_string({B, M, w.vdim()}), in.x_v));
    }
    check_masks(masks, {B, N, M, E, w.kdim(), w.vdim(), heads, heads, inner / heads});
    const std::size_t d_k = inner / heads;
    const std::size_t G = w.kv_width() / d_k;
    if (w.kv_width() % d_k != 0 || G == 0 || w.w_v.size(0) != w.kv_width()) {
        throw Error("W_k " + to_string(w.w_k.shape()) + " and W_v " + to_string(w.w_v.shape()) +
                    " must both have G·d_k rows (d_k = " + std::to_string(d_k) +
                    ") for G key/value heads dividing h = " + std::to_string(heads));
    }
    check_kv_heads(heads, G);
    return {B, N, M, E, w.kdim(), w.vdim(), heads, G, d_k};
}

void check_dry_workspace(const Tensor& x, const ForwardOptions& options) {
    if (x.dry() && !(options.workspace && options.workspace->is_dry()))
        throw Error("internal error: a dry run's tensors come from a dry workspace "
                    "(ForwardOptions::workspace = Workspace::dry())");
}

Sizes check_pass(const Weights& w, const Inputs& in, const Masks& masks,
                 const ForwardOptions& options) {
    const Sizes s = check_shapes(w, in, masks, options.heads);
    check_dry_workspace(in.x_q, options);
    if (options.path == AttentionPath::Streaming) require_streamed(masks);
    const bool positional = masks.alibi || masks.window > 0 || options.rope;
    if (positional && s.seq_len > s.kv_len) {
        throw Error(
            "RoPE, ALiBi and the window place the N queries at the last N of the M "
            "key positions, so N = " +
            std::to_string(s.seq_len) + " must not exceed M = " + std::to_string(s.kv_len));
    }
    if (options.rope && s.d_k() % 2 != 0) {
        throw Error("RoPE rotates pairs of features, so d_k must be even, got d_k = " +
                    std::to_string(s.d_k()));
    }
    if (w.q_norm.empty() != w.k_norm.empty() ||
        (!w.q_norm.empty() &&
         (w.q_norm.shape() != Shape{s.d_k()} || w.k_norm.shape() != Shape{s.d_k()}))) {
        throw Error("QK-norm needs q_norm.weight and k_norm.weight of shape (d_k) = (" +
                    std::to_string(s.d_k()) + ")");
    }
    if (masks.causal && appended_kv(w, options).count() > 0) {
        throw Error(
            "a causal mask cannot combine with key/value positions appended after the "
            "projections (add_bias_kv, add_zero_attn): give the causal mask as an "
            "attn_mask, which is padded as PyTorch pads it");
    }
    if (options.ablate_head && *options.ablate_head >= s.heads) {
        throw Error("cannot ablate head " + std::to_string(*options.ablate_head) +
                    ": the heads are 0.." + std::to_string(s.heads - 1));
    }
    return s;
}

}  // namespace mha
