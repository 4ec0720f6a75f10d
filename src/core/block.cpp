// The transformer block, step by step after attention's 14 steps.

#include "core/block.h"

#include <utility>

#include "core/block_ops.h"
#include "core/checked.h"
#include "core/error.h"

namespace mha {

namespace {

using Dims = std::vector<std::string>;

const Dims model_dims = {"B", "N", "d_model"};

// What every block step needs: the tracer and the sizes for the multiply-adds.
struct BlockPass {
    const BlockWeights& w;
    std::uint64_t rows;  // B·N
    std::size_t threads;
    Tracer& tracer;
};

Tensor norm(const BlockPass& p, int number, const std::string& out, const std::string& which,
            const std::string& in, const Tensor& x) {
    const bool first = which == "1";
    Tensor y = layer_norm(x, first ? p.w.norm1_weight : p.w.norm2_weight,
                          first ? p.w.norm1_bias : p.w.norm2_bias);
    report(p.tracer, [&] {
        Step step = make_step(StepKind::Norm, number, "layer_norm", out, out + " = norm" + which + "(" + in + ")",
                              model_dims, y);
        step.facts.parameters = 2 * y.size(y.dim() - 1);  // gamma and beta
        return step;
    });
    return y;
}

Tensor residual(const BlockPass& p, int number, const std::string& out, const std::string& a_name,
                const Tensor& a, const std::string& b_name, const Tensor& b) {
    Tensor y = add(a, b);
    check_in_float32(y, "the residual stream (" + out + " = " + a_name + " + " + b_name + ")");
    report(p.tracer, [&] {
        return make_step(StepKind::Residual, number, "residual", out, out + " = " + a_name + " + " + b_name,
                         model_dims, y);
    });
    return y;
}

// FFN(y) = GELU(y W_1ᵀ + b_1) W_2ᵀ + b_2: (B, N, d_model) -> (B, N, d_ff) -> (B, N, d_model)
Tensor feed_forward(const BlockPass& p, int first_number, const std::string& in, const Tensor& y) {
    const std::uint64_t macs = p.rows * p.w.d_ff() * p.w.w_1.size(1);
    const Tensor u = project(y, p.w.w_1, p.w.b_1, p.threads);
    report(p.tracer, [&] {
        Step step = make_step(StepKind::FfnIn, first_number, "linear1", "ffn_hidden",
                              "ffn_hidden = " + in + " @ W_1.T + b_1", {"B", "N", "d_ff"}, u, macs);
        step.facts.parameters = p.w.w_1.numel() + p.w.b_1.numel();
        return step;
    });
    const Tensor g = gelu(u);
    report(p.tracer, [&] {
        return make_step(StepKind::Gelu, first_number + 1, "gelu", "ffn_hidden", "F.gelu(ffn_hidden)",
                         {"B", "N", "d_ff"}, g);
    });
    Tensor f = project(g, p.w.w_2, p.w.b_2, p.threads);
    check_in_float32(f, "the feed-forward (linear1, GELU, linear2)");
    report(p.tracer, [&] {
        Step step = make_step(StepKind::FfnOut, first_number + 2, "linear2", "ffn",
                              "ffn = F.gelu(ffn_hidden) @ W_2.T + b_2", model_dims, f, macs);
        step.facts.parameters = p.w.w_2.numel() + p.w.b_2.numel();
        return step;
    });
    return f;
}

}  // namespace

std::size_t BlockWeights::parameter_count() const {
    return norm1_weight.numel() + norm1_bias.numel() + norm2_weight.numel() + norm2_bias.numel() +
           w_1.numel() + b_1.numel() + w_2.numel() + b_2.numel();
}

std::uint64_t block_bytes(const Sizes& s, std::size_t d_ff) {
    const std::string what = "the memory for the block";
    return checked_product(
        {sizeof(float), checked_sum({checked_product({s.batch, s.seq_len, s.d_model, 5}, what),
                                     checked_product({s.batch, s.seq_len, d_ff, 2}, what)},
                                    what)},
        what);
}

void check_block(const BlockWeights& w, std::size_t E) {
    const std::size_t F = w.w_1.empty() ? 0 : w.d_ff();
    const std::pair<const char*, const Tensor*> vectors[] = {
        {"norm1.weight", &w.norm1_weight}, {"norm1.bias", &w.norm1_bias},
        {"norm2.weight", &w.norm2_weight}, {"norm2.bias", &w.norm2_bias},
        {"linear2.bias", &w.b_2}};
    for (const auto& [name, t] : vectors) {
        if (t->shape() != Shape{E}) {
            throw Error(std::string(name) + ": expected shape " + to_string({E}) + ", got " +
                        to_string(t->shape()));
        }
    }
    if (w.w_1.dim() != 2 || w.w_1.size(1) != E || w.b_1.shape() != Shape{F} ||
        w.w_2.shape() != Shape{E, F}) {
        throw Error("linear1 (d_ff, d_model) and linear2 (d_model, d_ff) do not fit d_model " +
                    std::to_string(E) + ": got " + to_string(w.w_1.shape()) + " and " +
                    to_string(w.w_2.shape()));
    }
}

ForwardResult forward_block(const Weights& attention, const BlockWeights& w, BlockKind kind,
                            const Inputs& in, const Masks& masks, const ForwardOptions& options,
                            Tracer& tracer) {
    if (!in.self_attention()) throw Error("the transformer block is self-attention: one input");
    check_block(w, attention.d_model());
    const Tensor x = in.x_q.contiguous();
    const BlockPass p{w, std::uint64_t(x.size(0)) * x.size(1), options.threads, tracer};
    if (kind == BlockKind::Pre) {
        const Tensor a = norm(p, 15, "x_norm", "1", "x", x);
        ForwardResult result = forward(attention, {a, a, a}, masks, options, tracer);
        const Tensor h = residual(p, 16, "h", "x", x, "attention", result.output);
        const Tensor b = norm(p, 17, "h_norm", "2", "h", h);
        result.output = residual(p, 21, "out", "h", h, "ffn", feed_forward(p, 18, "h_norm", b));
        return result;
    }
    ForwardResult result = forward(attention, {x, x, x}, masks, options, tracer);
    const Tensor sum = residual(p, 15, "h", "x", x, "attention", result.output);
    const Tensor h = norm(p, 16, "h", "1", "h", sum);
    const Tensor f = residual(p, 20, "out", "h", h, "ffn", feed_forward(p, 17, "h", h));
    result.output = norm(p, 21, "out", "2", "out", f);
    return result;
}

}  // namespace mha
