// The transformer block's backward: the adjoints of its steps 21 down to 15, in reverse order
// of the forward, with attention's backward in between, each described where it is computed.
// A residual hands its gradient to both branches unchanged, so only the sums where a tensor's
// two paths meet are steps.
//   pre:  b21 dout; b20 linear2; b19 GELU; b18 linear1; b17 norm2; b16 dh = dout + dh_ffn;
//         attention's b14-b0 from dh to dx_norm; b15 norm1; b15 dx += dh
//   post: b21 dout, norm2; b19 linear2; b18 GELU; b17 linear1; b20 dh = ds + dh_ffn;
//         b16 norm1; attention's b14-b0 from dsum; b15 dx += dsum

#include "core/backward/block_backward.h"

#include "core/backward/linear_backward.h"
#include "core/error.h"
#include "core/layers/gelu.h"
#include "core/layers/layer_norm.h"
#include "core/layers/residual.h"
#include "core/pass/describe.h"

namespace mha {

namespace {

// What every backward step needs: the block's weights, the threads, the memory (or null) and
// the trace.
struct BlockBack {
    const BlockWeights& w;
    std::size_t threads;
    Workspace* workspace;
    PassTrace& trace;
};

// One linear layer's adjoint, step `number`: the weight's and bias's gradients go to dw and
// db; returns dx.
Tensor linear_back(const BlockBack& b, int number, const LinearNames& names, const Tensor& x,
                   const Tensor& w, const Tensor& dy, Tensor& dw, Tensor& db) {
    LinearGrads grads =
        traced_linear_backward(number, names, x, w, dy, b.threads, b.workspace, b.trace);
    dw = std::move(grads.dw);
    db = std::move(grads.db);
    return std::move(grads.dx);
}

// FFNᵀ, linear2's adjoint numbered `first`: the gradient `out` at the feed-forward's input
// `in` from the one at its output, dy (B, N, d_model); linear1's and linear2's gradients go
// to g.
Tensor feed_forward_back(const BlockBack& b, int first, const std::string& dy,
                         const std::string& in, const std::string& out, const BlockKept& k,
                         const Tensor& d_ffn, BlockWeights& g) {
    const Tensor d_activated = linear_back(
        b, first, {"W_2", "F.gelu(ffn_hidden)", dy, "dW_2", "db_2", "dgelu", "d_model", "d_ff"},
        k.activated, b.w.w_2, d_ffn, g.w_2, g.b_2);
    const Tensor d_hidden = gelu_backward(k.hidden, d_activated, b.threads, b.workspace);
    b.trace.show(d_hidden, [&] {
        return described(StepKind::Gelu, first - 1, "gelu", "dffn_hidden",
                         "dffn_hidden = dgelu * (Phi(ffn_hidden) + ffn_hidden * phi(ffn_hidden))",
                         hidden_dims);
    });
    return linear_back(b, first - 2,
                       {"W_1", in, "dffn_hidden", "dW_1", "db_1", out, "d_ff", "d_model"}, k.ffn_in,
                       b.w.w_1, d_hidden, g.w_1, g.b_1);
}

// LNᵀ for norm1 (first) or norm2, step `number`: the gradient `out` at the norm's input from
// the one at its output, dy; γ's and β's to g.
Tensor norm_back(const BlockBack& b, bool first, int number, const std::string& dy,
                 const std::string& out, const Tensor& input, const Tensor& d_norm,
                 BlockWeights& g) {
    LayerNormGrads n = traced_norm_backward(number, first ? "norm1" : "norm2", dy, out, input,
                                            first ? b.w.norm1_weight : b.w.norm2_weight, d_norm,
                                            b.threads, b.workspace, b.trace);
    (first ? g.norm1_weight : g.norm2_weight) = std::move(n.gamma);
    (first ? g.norm1_bias : g.norm2_bias) = std::move(n.beta);
    return n.x;
}

// Step `number`, where a tensor's two paths meet: their gradients summed into `out`.
Tensor sum_back(const BlockBack& b, int number, const std::string& out,
                const std::string& expression, const Tensor& d_out, const Tensor& d_branch) {
    Tensor sum = residual_backward(d_out, d_branch, b.threads, b.workspace);
    b.trace.show(sum, [&] {
        return described(StepKind::Residual, number, "residual", out, expression, model_dims);
    });
    return sum;
}

// Attnᵀ: the gradient at attention's input (all three paths) from the one at its output, on
// what attention's forward kept; attention's weight gradients to g.
Tensor attention_back(const Weights& attention, BlockKind kind, const BlockKept& k, const Tensor& p,
                      const Masks& masks, const ForwardOptions& options, const Tensor& d_attention,
                      PassTrace& trace, BlockGradients& g) {
    Gradients a = backward(attention, {k.attn_in, k.attn_in, k.attn_in}, masks, options,
                           Form::Packed, k.attention, p, d_attention, trace, kind);
    g.attention = std::move(a.params);
    return a.input;
}

}  // namespace

LinearGrads traced_linear_backward(int number, const LinearNames& n, const Tensor& x,
                                   const Tensor& w, const Tensor& dy, std::size_t threads,
                                   Workspace* workspace, PassTrace& trace) {
    LinearGrads g = linear_backward(x, w, true, dy, threads, workspace);
    const std::uint64_t macs = macs_of({dy.numel() / w.size(0), w.size(0), w.size(1)});
    trace.show(g.dw, [&] {
        return described(StepKind::WeightGrad, number, "grad", n.dw,
                         n.dw + " = " + n.dy + ".T @ " + n.x, {n.out_dim, n.in_dim}, macs);
    });
    trace.show(g.db, [&] {
        return described(StepKind::BiasGrad, number, "grad", n.db,
                         n.db + " = " + n.dy + ".sum((0, 1))", {n.out_dim});
    });
    trace.show(g.dx, [&] {
        return described(StepKind::InputGrad, number, "grad", n.dx,
                         n.dx + " = " + n.dy + " @ " + n.w, {"B", "N", n.in_dim}, macs);
    });
    return g;
}

LayerNormGrads traced_norm_backward(int number, const std::string& norm, const std::string& dy,
                                    const std::string& out, const Tensor& x, const Tensor& gamma,
                                    const Tensor& d_norm, std::size_t threads, Workspace* workspace,
                                    PassTrace& trace) {
    LayerNormGrads g = layer_norm_backward(x, gamma, d_norm, threads, workspace);
    trace.show(g.gamma, [&] {
        return described(StepKind::WeightGrad, number, "grad", "d" + norm + ".weight",
                         "d" + norm + ".weight = (" + dy + " * x_hat).sum((0, 1))", {"d_model"});
    });
    trace.show(g.beta, [&] {
        return described(StepKind::BiasGrad, number, "grad", "d" + norm + ".bias",
                         "d" + norm + ".bias = " + dy + ".sum((0, 1))", {"d_model"});
    });
    trace.show(g.x, [&] {
        return described(StepKind::Norm, number, "layer_norm", out,
                         out + " = (g - g.mean(-1) - x_hat * (g * x_hat).mean(-1)) / sigma,  g = " +
                             dy + " * " + norm + ".weight",
                         model_dims);
    });
    return g;
}

BlockGradients block_backward(const Weights& attention, const BlockWeights& w, BlockKind kind,
                              const Masks& masks, const ForwardOptions& options, const BlockKept& k,
                              const Tensor& attention_weights, const Tensor& grad_output,
                              PassTrace& trace) {
    if (grad_output.shape() != k.norm1_in.shape()) {
        throw Error("the output's gradient is " + to_string(grad_output.shape()) +
                    ", expected the block's output shape (B, N, d_model) = " +
                    to_string(k.norm1_in.shape()));
    }
    const Tensor d_out = grad_output.contiguous();
    const BlockBack b{w, options.threads, options.workspace, trace};
    const Tensor& p = attention_weights;
    BlockGradients g;
    trace.begin_backward();
    trace.show(d_out, [&] {
        return described(StepKind::GradOutput, 21, "grad", "dout",
                         "dout = out.grad  (L = (out * dout).sum())", model_dims);
    });
    if (kind == BlockKind::Pre) {
        // b20-b18 the FFN; b17 norm2; b16 h's two paths; b14-b0 attention, which read
        // norm1(x); b15 norm1; then x's two paths
        const Tensor d_ffn_in =
            feed_forward_back(b, 20, "dout", "h_norm", "dh_norm", k, d_out, g.block);
        const Tensor dh_ffn =
            norm_back(b, false, 17, "dh_norm", "dh_ffn", k.norm2_in, d_ffn_in, g.block);
        const Tensor dh = sum_back(
            b, 16, "dh", "dh = dout + dh_ffn  (h feeds norm2 and out = h + ffn)", d_out, dh_ffn);
        const Tensor d_attn_in =
            attention_back(attention, kind, k, p, masks, options, dh, trace, g);
        const Tensor dx = norm_back(b, true, 15, "dx_norm", "dx", k.norm1_in, d_attn_in, g.block);
        g.input =
            sum_back(b, 15, "dx", "dx = dx + dh  (x feeds norm1 and h = x + attention)", dx, dh);
        return g;
    }
    // b21 norm2; b19-b17 the FFN; b20 h's two paths; b16 norm1; b14-b0 attention; then x's
    // two paths
    const Tensor ds = norm_back(b, false, 21, "dout", "ds", k.norm2_in, d_out, g.block);
    const Tensor dh_ffn = feed_forward_back(b, 19, "ds", "h", "dh_ffn", k, ds, g.block);
    const Tensor dh =
        sum_back(b, 20, "dh", "dh = ds + dh_ffn  (h feeds the FFN and out = h + ffn)", ds, dh_ffn);
    const Tensor d_sum = norm_back(b, true, 16, "dh", "dsum", k.norm1_in, dh, g.block);
    const Tensor dx = attention_back(attention, kind, k, p, masks, options, d_sum, trace, g);
    g.input = sum_back(b, 15, "dx", "dx = dx + dsum  (x feeds attention and h = x + attention)", dx,
                       d_sum);
    return g;
}

BlockBackwardResult block_forward_backward(const Weights& attention, const BlockWeights& w,
                                           BlockKind kind, const Inputs& in, const Masks& masks,
                                           const ForwardOptions& options, const Tensor& grad_output,
                                           Tracer& tracer) {
    if (grad_output.shape() != in.x_q.shape()) {
        throw Error(
            "the output's gradient is " + to_string(grad_output.shape()) +
            ", expected the block's output shape (B, N, d_model) = " + to_string(in.x_q.shape()));
    }
    BlockKept k;
    PassTrace trace(tracer);
    BlockBackwardResult r;
    r.forward = forward_block(attention, w, kind, in, masks, options, trace, &k);
    r.grads = block_backward(attention, w, kind, masks, options, k, r.forward.weights, grad_output,
                             trace);
    return r;
}

}  // namespace mha
