// The transformer block's backward: the adjoints of its steps 21 down to 15, in reverse order
// of the forward, with attention's backward in between.

#include "core/backward/block_backward.h"

#include "core/layers/gelu.h"
#include "core/layers/layer_norm.h"
#include "core/backward/linear_backward.h"
#include "core/layers/residual.h"
#include "core/error.h"

namespace mha {

namespace {

// What every backward step needs: the block's weights, the threads, the memory (or null) and
// the block's plan.
struct BlockBack {
    const BlockWeights& w;
    std::size_t threads;
    Workspace* workspace;
    PassTrace& trace;
};

// One linear layer's adjoint, traced as dW, db, dx: the weight's and bias's gradients go to
// dw and db; returns dx.
Tensor linear_back(const BlockBack& b, const Tensor& x, const Tensor& w, const Tensor& dy,
                   Tensor& dw, Tensor& db) {
    LinearGrads grads = linear_backward(x, w, true, dy, b.threads, b.workspace);
    dw = std::move(grads.dw);
    db = std::move(grads.db);
    b.trace.show(dw);
    b.trace.show(db);
    b.trace.show(grads.dx);
    return std::move(grads.dx);
}

// FFNᵀ: the gradient at the feed-forward's input from the one at its output, d_ffn
// (B, N, d_model); linear1's and linear2's gradients go to g.
Tensor feed_forward_back(const BlockBack& b, const BlockKept& k, const Tensor& d_ffn,
                         BlockWeights& g) {
    const Tensor d_activated = linear_back(b, k.activated, b.w.w_2, d_ffn, g.w_2, g.b_2);
    const Tensor d_hidden = gelu_backward(k.hidden, d_activated, b.threads, b.workspace);
    b.trace.show(d_hidden);
    return linear_back(b, k.ffn_in, b.w.w_1, d_hidden, g.w_1, g.b_1);
}

// LNᵀ for norm1 (first) or norm2: the gradient at the norm's input; γ's and β's to g.
Tensor norm_back(const BlockBack& b, bool first, const Tensor& input, const Tensor& d_norm,
                 BlockWeights& g) {
    LayerNormGrads n = layer_norm_backward(input, first ? b.w.norm1_weight : b.w.norm2_weight,
                                           d_norm, b.threads, b.workspace);
    Tensor& gamma = first ? g.norm1_weight : g.norm2_weight;
    Tensor& beta = first ? g.norm1_bias : g.norm2_bias;
    gamma = std::move(n.gamma);
    beta = std::move(n.beta);
    b.trace.show(gamma);
    b.trace.show(beta);
    b.trace.show(n.x);
    return n.x;
}

// Where a tensor's two paths meet: their gradients summed.
Tensor sum_back(const BlockBack& b, const Tensor& d_out, const Tensor& d_branch) {
    Tensor sum = residual_backward(d_out, d_branch, b.threads, b.workspace);
    b.trace.show(sum);
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
    trace.show(d_out);  // b21
    if (kind == BlockKind::Pre) {
        // b20-b18 the FFN; b17 norm2; b16 h's two paths; b14-b0 attention, which read
        // norm1(x); b15 norm1; then x's two paths
        const Tensor d_ffn_in = feed_forward_back(b, k, d_out, g.block);
        const Tensor dh = sum_back(b, d_out, norm_back(b, false, k.norm2_in, d_ffn_in, g.block));
        const Tensor d_attn_in =
            attention_back(attention, kind, k, p, masks, options, dh, trace, g);
        g.input = sum_back(b, norm_back(b, true, k.norm1_in, d_attn_in, g.block), dh);
        return g;
    }
    // b21 norm2; b19-b17 the FFN; b20 h's two paths; b16 norm1; b14-b0 attention; then x's
    // two paths
    const Tensor ds = norm_back(b, false, k.norm2_in, d_out, g.block);
    const Tensor dh = sum_back(b, ds, feed_forward_back(b, k, ds, g.block));
    const Tensor d_sum = norm_back(b, true, k.norm1_in, dh, g.block);
    g.input =
        sum_back(b, attention_back(attention, kind, k, p, masks, options, d_sum, trace, g), d_sum);
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
    PassSpec spec = block_spec(attention, w, kind, in, masks, options);
    spec.backward = true;
    PassTrace trace(tracer, spec);
    BlockBackwardResult r;
    r.forward = forward_block(attention, w, kind, in, masks, options, trace, &k);
    r.grads = block_backward(attention, w, kind, masks, options, k, r.forward.weights, grad_output,
                             trace);
    return r;
}

}  // namespace mha
