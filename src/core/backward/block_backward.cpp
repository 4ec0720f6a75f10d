// The transformer block's backward: the adjoints of its steps 21 down to 15, in reverse order
// of the forward, with attention's backward in between.

#include "core/backward/block_backward.h"

#include "core/backward/gelu.h"
#include "core/backward/layer_norm.h"
#include "core/backward/linear_backward.h"
#include "core/backward/residual.h"
#include "core/error.h"

namespace mha {

namespace {

// FFNᵀ: the gradient at the feed-forward's input from the one at its output, d_ffn
// (B, N, d_model); linear1's and linear2's gradients go to g.
Tensor feed_forward_back(const BlockWeights& w, const BlockKept& k, const Tensor& d_ffn,
                         std::size_t threads, BlockWeights& g) {
    LinearGrads second = linear_backward(k.activated, w.w_2, true, d_ffn, threads);  // linear2
    const Tensor d_hidden = gelu_backward(k.hidden, second.dx, threads);             // GELU
    LinearGrads first = linear_backward(k.ffn_in, w.w_1, true, d_hidden, threads);   // linear1
    g.w_2 = std::move(second.dw);
    g.b_2 = std::move(second.db);
    g.w_1 = std::move(first.dw);
    g.b_1 = std::move(first.db);
    return first.dx;
}

// LNᵀ for norm1 (first) or norm2: the gradient at the norm's input; γ's and β's to g.
Tensor norm_back(const BlockWeights& w, bool first, const Tensor& input, const Tensor& d_norm,
                 std::size_t threads, BlockWeights& g) {
    LayerNormGrads n =
        layer_norm_backward(input, first ? w.norm1_weight : w.norm2_weight, d_norm, threads);
    (first ? g.norm1_weight : g.norm2_weight) = std::move(n.gamma);
    (first ? g.norm1_bias : g.norm2_bias) = std::move(n.beta);
    return n.x;
}

// Attnᵀ: the gradient at attention's input (all three paths) from the one at its output;
// attention's weight gradients to g.
Tensor attention_back(const Weights& attention, const BlockKept& k, const Masks& masks,
                      const ForwardOptions& options, const Tensor& d_attention, BlockGradients& g) {
    NullTracer quiet;
    BackwardResult r = forward_backward(attention, {k.attn_in, k.attn_in, k.attn_in}, masks,
                                        options, Form::Packed, d_attention, quiet);
    g.attention = std::move(r.grads.params);
    return r.grads.input;
}

}  // namespace

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
    PassTrace trace(tracer, block_spec(attention, w, kind, in, masks, options));
    BlockBackwardResult r;
    r.forward = forward_block(attention, w, kind, in, masks, options, trace, &k);
    const Tensor d_out = grad_output.contiguous();
    const std::size_t threads = options.threads;
    BlockGradients& g = r.grads;
    if (kind == BlockKind::Pre) {
        // b21 out = h + ffn hands dOut to both; b20-b18 the FFN; b17 LN_2; b16 h = x + attn
        const Tensor d_ffn_in = feed_forward_back(w, k, d_out, threads, g.block);
        const Tensor d_norm2_in = norm_back(w, false, k.norm2_in, d_ffn_in, threads, g.block);
        const Tensor dh = residual_backward(d_out, d_norm2_in);
        // b14-b0 attention, on LN_1(x); b15 LN_1; then x's two paths summed
        const Tensor d_attn_in = attention_back(attention, k, masks, options, dh, g);
        g.input =
            residual_backward(dh, norm_back(w, true, k.norm1_in, d_attn_in, threads, g.block));
        return r;
    }
    // b21 LN_2; b20 s = h + ffn; b19-b17 the FFN, and h's two paths summed
    const Tensor ds = norm_back(w, false, k.norm2_in, d_out, threads, g.block);
    const Tensor dh = residual_backward(ds, feed_forward_back(w, k, ds, threads, g.block));
    // b16 LN_1; b15 x + attn; b14-b0 attention, on x; then x's two paths summed
    const Tensor d_sum = norm_back(w, true, k.norm1_in, dh, threads, g.block);
    g.input = residual_backward(d_sum, attention_back(attention, k, masks, options, d_sum, g));
    return r;
}

}  // namespace mha
