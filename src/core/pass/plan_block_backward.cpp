// The block's backward steps, planned around attention's (core/pass/plan_backward.cpp), each
// numbered by the block step it undoes; core/backward/block_backward.cpp computes them in
// this order. A residual hands its gradient to both branches unchanged, so only the sums where
// a tensor's two paths meet are steps.
//   pre:  b21 dout; b20 linear2; b19 GELU; b18 linear1; b17 norm2; b16 dh = dout + dh_ffn;
//         attention's b14-b0 from dh to dx_norm; b15 norm1; b15 dx += dh
//   post: b21 dout, norm2; b19 linear2; b18 GELU; b17 linear1; b20 dh = ds + dh_ffn;
//         b16 norm1; attention's b14-b0 from dsum; b15 dx += dsum

#include "core/pass/planner.h"

namespace mha {

namespace {

// The gradient the block's backward starts from: (B, N, d_model).
void plan_grad_output(Planner& p) {
    p.add(StepKind::GradOutput, 21, "grad", "dout", "dout = out.grad  (L = (out * dout).sum())",
          model_dims, model_layout(p.s));
}

// A LayerNorm's backward: d gamma, d beta and the gradient at its input, `out`.
void plan_norm_back(Planner& p, int number, const std::string& norm, const std::string& dy,
                    const std::string& out) {
    const Layout vector = Layout::contiguous_of({p.s.d_model});
    p.add(StepKind::WeightGrad, number, "grad", "d" + norm + ".weight",
          "d" + norm + ".weight = (" + dy + " * x_hat).sum((0, 1))", {"d_model"}, vector);
    p.add(StepKind::BiasGrad, number, "grad", "d" + norm + ".bias",
          "d" + norm + ".bias = " + dy + ".sum((0, 1))", {"d_model"}, vector);
    p.add(StepKind::Norm, number, "layer_norm", out,
          out + " = (g - g.mean(-1) - x_hat * (g * x_hat).mean(-1)) / sigma,  g = " + dy + " * " +
              norm + ".weight",
          model_dims, model_layout(p.s));
}

// The feed-forward's backward from dy (B, N, d_model), linear2 numbered `first`: dW_2, db_2,
// dgelu; dffn_hidden through GELU'; dW_1, db_1 and the gradient at its input, `out`.
void plan_feed_forward_back(Planner& p, int first, const std::string& dy, const std::string& in,
                            const std::string& out) {
    const std::uint64_t E = p.s.d_model, F = p.spec.block->d_ff, macs = ffn_macs(p);
    const Layout hidden = hidden_layout(p);
    p.add(StepKind::WeightGrad, first, "grad", "dW_2", "dW_2 = " + dy + ".T @ F.gelu(ffn_hidden)",
          {"d_model", "d_ff"}, Layout::contiguous_of({E, F}), macs);
    p.add(StepKind::BiasGrad, first, "grad", "db_2", "db_2 = " + dy + ".sum((0, 1))", {"d_model"},
          Layout::contiguous_of({E}));
    p.add(StepKind::InputGrad, first, "grad", "dgelu", "dgelu = " + dy + " @ W_2", hidden_dims,
          hidden, macs);
    p.add(StepKind::Gelu, first - 1, "gelu", "dffn_hidden",
          "dffn_hidden = dgelu * (Phi(ffn_hidden) + ffn_hidden * phi(ffn_hidden))", hidden_dims,
          hidden);
    p.add(StepKind::WeightGrad, first - 2, "grad", "dW_1", "dW_1 = dffn_hidden.T @ " + in,
          {"d_ff", "d_model"}, Layout::contiguous_of({F, E}), macs);
    p.add(StepKind::BiasGrad, first - 2, "grad", "db_1", "db_1 = dffn_hidden.sum((0, 1))", {"d_ff"},
          Layout::contiguous_of({F}));
    p.add(StepKind::InputGrad, first - 2, "grad", out, out + " = dffn_hidden @ W_1", model_dims,
          model_layout(p.s), macs);
}

// "out = a + b": where a tensor's two paths meet, their gradients summed.
void plan_sum(Planner& p, int number, const std::string& out, const std::string& expression) {
    p.add(StepKind::Residual, number, "residual", out, expression, model_dims, model_layout(p.s));
}

}  // namespace

void plan_block_backward_head(Planner& p) {
    plan_grad_output(p);
    if (p.spec.block->kind == BlockKind::Pre) {
        plan_feed_forward_back(p, 20, "dout", "h_norm", "dh_norm");
        plan_norm_back(p, 17, "norm2", "dh_norm", "dh_ffn");
        plan_sum(p, 16, "dh", "dh = dout + dh_ffn  (h feeds norm2 and out = h + ffn)");
        return;
    }
    plan_norm_back(p, 21, "norm2", "dout", "ds");
    plan_feed_forward_back(p, 19, "ds", "h", "dh_ffn");
    plan_sum(p, 20, "dh", "dh = ds + dh_ffn  (h feeds the FFN and out = h + ffn)");
    plan_norm_back(p, 16, "norm1", "dh", "dsum");
}

void plan_model_backward(Planner& p, const ModelSpec& spec) {
    const Sizes& s = p.s;
    const std::size_t B = s.batch, N = s.seq_len, E = s.d_model, V = spec.vocab;
    const std::uint64_t macs = macs_of({B, N, V, E});
    p.add(StepKind::LossGrad, 23, "grad", "dlogits",
          "dlogits = (F.softmax(logits, -1) - F.one_hot(targets, V)) / (B*N)  "
          "(L = F.cross_entropy(logits, targets))",
          {"B", "N", "V"}, Layout::contiguous_of({B, N, V}));
    p.add(StepKind::WeightGrad, 23, "grad", "dlm_head.weight",
          "dlm_head.weight = dlogits.T @ x_final  (summed over B and the positions)",
          {"V", "d_model"}, Layout::contiguous_of({V, E}), macs);
    p.add(StepKind::BiasGrad, 23, "grad", "dlm_head.bias", "dlm_head.bias = dlogits.sum((0, 1))",
          {"V"}, Layout::contiguous_of({V}));
    p.add(StepKind::InputGrad, 23, "grad", "dx_final", "dx_final = dlogits @ lm_head.weight",
          model_dims, model_layout(s), macs);
    plan_norm_back(p, 22, "norm", "dx_final", "dx");
    for (std::size_t l = spec.layers; l-- > 0;) {
        if (l == spec.traced) {
            plan_block_backward_head(p);
            plan_backward(p);
            plan_block_backward_tail(p);
            continue;
        }
        p.add(StepKind::Layer, 0, "block", "dx",
              "dx = layers[" + std::to_string(l) + "]'s backward of dx  (b21 ... b15 in one step)",
              model_dims, model_layout(s));
    }
    p.add(StepKind::EmbedGrad, 0, "grad", "dtoken_embedding.weight",
          "dtoken_embedding.weight = zeros(V, d_model).index_add_(0, tokens, dx)", {"V", "d_model"},
          Layout::contiguous_of({V, E}));
    p.add(StepKind::EmbedGrad, 0, "grad", "dposition_embedding.weight",
          "dposition_embedding.weight[:N] = dx.sum(0)  (rows past N stay 0)",
          {"context", "d_model"}, Layout::contiguous_of({spec.context, E}));
}

void plan_block_backward_tail(Planner& p) {
    if (p.spec.block->kind == BlockKind::Pre) {
        plan_norm_back(p, 15, "norm1", "dx_norm", "dx");
        plan_sum(p, 15, "dx", "dx = dx + dh  (x feeds norm1 and h = x + attention)");
        return;
    }
    plan_sum(p, 15, "dx", "dx = dx + dsum  (x feeds attention and h = x + attention)");
}

}  // namespace mha
