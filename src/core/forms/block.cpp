// The transformer block around attention: the norms, residual sums and feed-forward, each
// described where it is computed, between attention's steps 0-14 (core/pass/attention.cpp).
//   pre:  15 x_norm = norm1(x), 0-14, 16 h = x + attention, 17 h_norm = norm2(h),
//         18-20 the feed-forward, 21 out = h + ffn
//   post: 0-14, 15 h = x + attention, 16 h = norm1(h), 17-19 the feed-forward,
//         20 out = h + ffn, 21 out = norm2(out)

#include "core/forms/block.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "core/error.h"
#include "core/layers/gelu.h"
#include "core/layers/layer_norm.h"
#include "core/ops/block_ops.h"
#include "core/ops/rms_norm.h"
#include "core/pass/describe.h"
#include "core/pass/projection.h"

namespace mha {

namespace {

// What every block step needs: the weights (and their packing, or null), the threads, the
// memory (or null) and the trace.
struct BlockPass {
    const BlockWeights& w;
    const PackedFeedForward* packed;
    std::size_t threads;
    Workspace* workspace;
    PassTrace& trace;

    // y = x Wᵀ + b of one of the feed-forward's linear layers, W packed once when given.
    Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias,
                  PackedLinear PackedFeedForward::*which) const {
        return project(x, weight, bias, threads, workspace, packed ? &(packed->*which) : nullptr);
    }
};

// Step `number`, "out = norm1(in)" (first) or norm2: x (B, N, d_model) normalised.
Tensor norm(const BlockPass& p, bool first, int number, const std::string& out,
            const std::string& in, const Tensor& x) {
    const BlockStyle& style = p.w.style;
    Tensor y = apply_norm(x, first ? p.w.norm1_weight : p.w.norm2_weight,
                          first ? p.w.norm1_bias : p.w.norm2_bias, style.norm, style.rms_eps,
                          p.threads, p.workspace);
    p.trace.show(y, [&] {
        return norm_step(number, out, first ? "norm1" : "norm2", in, x.size(2), style.norm,
                         style.rms_eps);
    });
    return y;
}

// The sandwich's step `number`, "t = name(t)": a branch's output t (B, N, d_model)
// RMS-normalised with `weight` before its residual sum; t itself without a sandwich.
Tensor sandwich_norm(const BlockPass& p, int number, const std::string& t,
                     const std::string& name, const Tensor& weight, const Tensor& x) {
    if (!p.w.style.sandwich) return x;
    Tensor y = apply_norm(x, weight, Tensor(), NormKind::Rms, p.w.style.rms_eps, p.threads,
                          p.workspace);
    p.trace.show(y, [&] {
        return norm_step(number, t, name, t, x.size(2), NormKind::Rms, p.w.style.rms_eps);
    });
    return y;
}

// Step `number`, "out = a_name + b_name": the residual sum a + b (B, N, d_model).
Tensor residual(const BlockPass& p, int number, const std::string& out, const std::string& a_name,
                const std::string& b_name, const Tensor& a, const Tensor& b) {
    Tensor y = add(a, b, p.threads, p.workspace);
    const std::string sum = out + " = " + a_name + " + " + b_name;
    check_in_float32(y, "the residual stream (" + sum + ")");
    p.trace.show(
        y, [&] { return described(StepKind::Residual, number, "residual", out, sum, model_dims); });
    return y;
}

// Steps first..first+2, FFN(in) = GELU(in W_1ᵀ + b_1) W_2ᵀ + b_2 of in = k.ffn_in:
// (B, N, d_model) -> (B, N, d_ff) -> (B, N, d_model); k keeps the hidden layer before and
// after GELU.
Tensor feed_forward(const BlockPass& p, int first, const std::string& in, BlockKept& k) {
    const std::uint64_t macs = macs_of(
        {k.ffn_in.size(0), k.ffn_in.size(1), p.w.d_ff(), k.ffn_in.size(2)});  // each linear layer's
    k.hidden = p.linear(k.ffn_in, p.w.w_1, p.w.b_1, &PackedFeedForward::w_1);
    p.trace.show(k.hidden, [&] {
        Step step = described(StepKind::FfnIn, first, "linear1", "ffn_hidden",
                              "ffn_hidden = " + in + " @ W_1.T + b_1", hidden_dims, macs);
        step.facts.parameters = p.w.w_1.numel() + p.w.b_1.numel();
        return step;
    });
    const Activation act = p.w.style.activation;
    k.activated = act == Activation::Gelu ? gelu(k.hidden, p.threads, p.workspace)
                                          : activate(k.hidden, act, p.threads, p.workspace);
    p.trace.show(k.activated, [&] {
        Step step = described(StepKind::Gelu, first + 1, "gelu", "ffn_hidden",
                              std::string(activation_name(act)) + "(ffn_hidden)", hidden_dims);
        if (act != Activation::Gelu) step.facts.activation = activation_name(act);
        return step;
    });
    Tensor f = p.linear(k.activated, p.w.w_2, p.w.b_2, &PackedFeedForward::w_2);
    check_in_float32(f, "the feed-forward (linear1, GELU, linear2)");
    p.trace.show(f, [&] {
        Step step = described(StepKind::FfnOut, first + 2, "linear2", "ffn",
                              "ffn = " + std::string(activation_name(act)) +
                                  "(ffn_hidden) @ W_2.T + b_2",
                              model_dims, macs);
        step.facts.parameters = p.w.w_2.numel() + p.w.b_2.numel();
        return step;
    });
    return f;
}

// Steps first..first+2 of the gated feed-forward, FFN(in) = (act(in W_1ᵀ) ∘ in W_upᵀ) W_2ᵀ
// (+ biases when the checkpoint has them) of in = k.ffn_in: k keeps the gate before and the
// product after the activation.
Tensor gated_feed_forward(const BlockPass& p, int first, const std::string& in, BlockKept& k) {
    const std::uint64_t macs =
        macs_of({k.ffn_in.size(0), k.ffn_in.size(1), p.w.d_ff(), k.ffn_in.size(2)});
    const std::string act = activation_name(p.w.style.activation);
    k.hidden = p.linear(k.ffn_in, p.w.w_1, p.w.b_1, &PackedFeedForward::w_1);
    p.trace.show(k.hidden, [&] {
        Step step =
            described(StepKind::FfnIn, first, "gate_proj", "ffn_gate",
                      "ffn_gate = " + in + " @ W_gate.T" + bias_suffix(!p.w.b_1.empty(), "b_gate"),
                      hidden_dims, macs);
        step.facts.parameters = p.w.w_1.numel() + p.w.b_1.numel();
        step.facts.gated = true;
        return step;
    });
    k.up = p.linear(k.ffn_in, p.w.w_up, p.w.b_up, &PackedFeedForward::w_up);
    k.activated = activate_gated(k.hidden, k.up, p.w.style.activation, p.threads, p.workspace);
    p.trace.show(k.activated, [&] {
        Step step = described(StepKind::Gelu, first + 1, "gated", "ffn_hidden",
                              "ffn_hidden = " + act + "(ffn_gate) * (" + in + " @ W_up.T" +
                                  bias_suffix(!p.w.b_up.empty(), "b_up") + ")",
                              hidden_dims, macs);
        step.facts.parameters = p.w.w_up.numel() + p.w.b_up.numel();
        step.facts.activation = act;
        step.facts.gated = true;
        return step;
    });
    Tensor f = p.linear(k.activated, p.w.w_2, p.w.b_2, &PackedFeedForward::w_2);
    check_in_float32(f, "the feed-forward (gate, up, down)");
    p.trace.show(f, [&] {
        Step step =
            described(StepKind::FfnOut, first + 2, "down_proj", "ffn",
                      "ffn = ffn_hidden @ W_down.T" + bias_suffix(!p.w.b_2.empty(), "b_down"),
                      model_dims, macs);
        step.facts.parameters = p.w.w_2.numel() + p.w.b_2.numel();
        return step;
    });
    return f;
}

// The style's feed-forward: steps first..first+2.
Tensor any_feed_forward(const BlockPass& p, int first, const std::string& in, BlockKept& k) {
    return p.w.style.gated ? gated_feed_forward(p, first, in, k) : feed_forward(p, first, in, k);
}

// The block attends over one input, and its weights fit d_model.
void check_block_pass(const Weights& attention, const BlockWeights& w, BlockKind kind,
                      const Inputs& in) {
    if (!in.self_attention()) throw Error("the transformer block is self-attention: one input");
    if (kind == BlockKind::Post && !w.style.is_default()) {
        throw Error("a post-norm block has LayerNorms and a plain GELU feed-forward only");
    }
    check_block(w, attention.d_model());
}

}  // namespace

Step norm_step(int number, const std::string& out, const std::string& norm, const std::string& in,
               std::size_t d_model) {
    return norm_step(number, out, norm, in, d_model, NormKind::Layer, 0.0);
}

Step norm_step(int number, const std::string& out, const std::string& norm, const std::string& in,
               std::size_t d_model, NormKind kind, double rms_eps) {
    const bool layer = kind == NormKind::Layer;
    Step step = described(StepKind::Norm, number, layer ? "layer_norm" : "rms_norm", out,
                          out + " = " + norm + "(" + in + ")", model_dims);
    step.facts.parameters = (layer ? 2 : 1) * std::uint64_t(d_model);
    if (!layer) step.facts.rms_eps = rms_eps;
    return step;
}

Tensor apply_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, NormKind kind,
                  double rms_eps, std::size_t threads, Workspace* workspace) {
    if (kind == NormKind::Layer) return layer_norm(x, weight, bias, threads, workspace);
    if (any_dry(x, weight)) return new_dry(workspace, x.shape());
    Tensor y = new_uninitialised(workspace, x.shape());
    std::copy(x.data(), x.data() + x.numel(), y.data());
    rms_norm_rows(y, weight, rms_eps);
    return y;
}

PackedFeedForward pack_feed_forward(const BlockWeights& w) {
    const auto pack = [](const Tensor& t) {
        return t.empty() ? PackedLinear{} : pack_linear(t.data(), t.size(0), t.size(1));
    };
    return {pack(w.w_1), pack(w.w_2), pack(w.w_up)};
}

std::size_t BlockWeights::parameter_count() const {
    return norm1_weight.numel() + norm1_bias.numel() + norm2_weight.numel() + norm2_bias.numel() +
           w_1.numel() + b_1.numel() + w_2.numel() + b_2.numel() + w_up.numel() + b_up.numel() +
           post_attn_norm.numel() + post_ffn_norm.numel();
}

void check_block(const BlockWeights& w, std::size_t E) {
    const std::size_t F = w.w_1.empty() ? 0 : w.d_ff();
    const BlockStyle& style = w.style;
    const bool layer = style.norm == NormKind::Layer;
    // each vector: its name, the tensor, and whether it may be absent
    const std::tuple<const char*, const Tensor*, bool> vectors[] = {
        {"norm1.weight", &w.norm1_weight, false},
        {"norm1.bias", &w.norm1_bias, !layer},
        {"norm2.weight", &w.norm2_weight, false},
        {"norm2.bias", &w.norm2_bias, !layer},
        {"linear2.bias", &w.b_2, !style.is_default()},
        {"post_attn_norm.weight", &w.post_attn_norm, !style.sandwich},
        {"post_ffn_norm.weight", &w.post_ffn_norm, !style.sandwich}};
    for (const auto& [name, t, optional] : vectors) {
        if (t->shape() != Shape{E} && !(optional && t->empty())) {
            throw Error(std::string(name) + ": expected shape " + to_string({E}) + ", got " +
                        to_string(t->shape()));
        }
    }
    const bool b_1_fits = w.b_1.shape() == Shape{F} || (!style.is_default() && w.b_1.empty());
    if (w.w_1.dim() != 2 || w.w_1.size(1) != E || !b_1_fits || w.w_2.shape() != Shape{E, F}) {
        throw Error("linear1 (d_ff, d_model) and linear2 (d_model, d_ff) do not fit d_model " +
                    std::to_string(E) + ": got " + to_string(w.w_1.shape()) + " and " +
                    to_string(w.w_2.shape()));
    }
    if (style.gated &&
        (w.w_up.shape() != w.w_1.shape() || !(w.b_up.empty() || w.b_up.shape() == Shape{F}))) {
        throw Error(
            "the gated feed-forward's up projection (d_ff, d_model) does not fit its gate " +
            to_string(w.w_1.shape()) + ": got " + to_string(w.w_up.shape()));
    }
}

ForwardResult forward_block(const Weights& attention, const BlockWeights& w, BlockKind kind,
                            const Inputs& in, const Masks& masks, const ForwardOptions& options,
                            Tracer& tracer) {
    PassTrace trace(tracer);
    return forward_block(attention, w, kind, in, masks, options, trace);
}

ForwardResult forward_block(const Weights& attention, const BlockWeights& w, BlockKind kind,
                            const Inputs& in, const Masks& masks, const ForwardOptions& options,
                            PassTrace& trace, BlockKept* keep, const PackedFeedForward* packed) {
    check_block_pass(attention, w, kind, in);
    const Tensor x = in.x_q.contiguous();
    BlockKept k;
    k.norm1_in = x;
    const BlockPass p{w, packed, options.threads, options.workspace, trace};
    ForwardOptions o = options;
    // what is kept holds its blocks of a workspace: no later tensor is given them while it lives
    if (keep) o.keep = &k.attention;
    ForwardResult result;
    if (kind == BlockKind::Pre) {
        k.attn_in = norm(p, true, 15, "x_norm", "x", x);  // then attention: 0-14
        result = forward(attention, {k.attn_in, k.attn_in, k.attn_in}, masks, o, trace);
        if (w.style.sandwich) k.post_attn_in = result.output;
        const Tensor branch = sandwich_norm(p, 16, "attention", "post_attn_norm", w.post_attn_norm,
                                            result.output);
        k.norm2_in = residual(p, 16, "h", "x", "attention", x, branch);
        k.ffn_in = norm(p, false, 17, "h_norm", "h", k.norm2_in);
        const Tensor unnormed = any_feed_forward(p, 18, "h_norm", k);  // 18-20
        if (w.style.sandwich) k.post_ffn_in = unnormed;
        const Tensor ffn = sandwich_norm(p, 21, "ffn", "post_ffn_norm", w.post_ffn_norm, unnormed);
        result.output = residual(p, 21, "out", "h", "ffn", k.norm2_in, ffn);
    } else {
        k.attn_in = x;
        result = forward(attention, {x, x, x}, masks, o, trace);  // 0-14
        k.norm1_in = residual(p, 15, "h", "x", "attention", x, result.output);
        k.ffn_in = norm(p, true, 16, "h", "h", k.norm1_in);
        const Tensor ffn = feed_forward(p, 17, "h", k);  // 17-19
        k.norm2_in = residual(p, 20, "out", "h", "ffn", k.ffn_in, ffn);
        result.output = norm(p, false, 21, "out", "out", k.norm2_in);
    }
    if (keep) *keep = std::move(k);
    return result;
}

}  // namespace mha
