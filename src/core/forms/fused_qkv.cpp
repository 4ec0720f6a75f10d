// Steps 1-5 with one projection for Q, K and V, then steps 6-14 as in forward().

#include "core/forms/fused_qkv.h"

#include <vector>

#include "core/pass/describe.h"
#include "core/pass/projection.h"
#include "core/pass/shape_checks.h"

namespace mha {

namespace {

Tensor stacked(const Tensor& q, const Tensor& k, const Tensor& v, Workspace* workspace) {
    Shape shape = q.shape();
    shape[0] *= 3;
    if (any_dry(q, k, v)) return new_dry(workspace, shape);
    Tensor out = new_uninitialised(workspace, shape);  // each part writes its third
    float* to = out.data();
    for (const Tensor* part : {&q, &k, &v}) {
        part->copy_to(to);
        to += part->numel();
    }
    return out;
}

}  // namespace

Tensor stacked_qkv_weight(const Weights& w, Workspace* workspace) {
    return stacked(w.w_q, w.w_k, w.w_v, workspace);
}

Tensor stacked_qkv_bias(const Weights& w, Workspace* workspace) {
    if (w.b_q.empty() && w.b_k.empty() && w.b_v.empty()) return Tensor();
    const auto or_zeros = [&w](const Tensor& b) { return b.empty() ? Tensor({w.q_width()}) : b; };
    return stacked(or_zeros(w.b_q), or_zeros(w.b_k), or_zeros(w.b_v), workspace);
}

ForwardResult forward_fused_qkv(const Weights& w, const Inputs& in, const Masks& masks,
                                const ForwardOptions& options, Tracer& tracer) {
    PassTrace trace(tracer);
    return forward_fused_qkv(w, in, masks, options, trace);
}

ForwardResult forward_fused_qkv(const Weights& w, const Inputs& in, const Masks& masks,
                                const ForwardOptions& options, PassTrace& trace) {
    const Sizes s = check_pass(w, in, masks, options);
    check_form(Form::FusedQkv, s, in.self_attention(), masks);
    const std::size_t B = s.batch, N = s.seq_len, h = s.heads, d_k = s.d_k();
    show_inputs(in, trace);  // 0

    // 1: (B, N, d_model) @ (3·h·d_k, d_model)ᵀ -> (B, N, 3·h·d_k)
    const Tensor qkv =
        project(in.x_q.contiguous(), stacked_qkv_weight(w, options.workspace),
                stacked_qkv_bias(w, options.workspace), options.threads, options.workspace);
    const std::string width = q_width_name(s);
    trace.show(qkv, [&] {
        const bool bias = !(w.b_q.empty() && w.b_k.empty() && w.b_v.empty());
        return described(Operand::Qkv, StepKind::Project, 1, "project", "qkv",
                         "qkv = x @ W_qkv.T" + bias_suffix(bias, "b_qkv"),
                         {"B", "N", "3·" + width}, macs_of({B, N, 3 * h * d_k, s.d_model}));
    });
    const Tensor split = qkv.view({B, N, 3, h, d_k});  // 4: (B, N, 3, h, d_k), no copy
    trace.show(split, [&] {
        Step step = described(Operand::Qkv, StepKind::SplitHeads, 4, "view", "qkv",
                              "qkv.view(B, N, 3, h, d_k)", {"B", "N", "qkv", "h", "d_k"});
        step.einops = "b n (three h d) -> b n three h d";
        return step;
    });
    const Tensor heads = split.permute({2, 0, 3, 1, 4});  // 5: (3, B, h, N, d_k), no copy
    trace.show(heads, [&] {
        Step step = described(Operand::Qkv, StepKind::MoveHeads, 5, "permute", "qkv",
                              "qkv.permute(2, 0, 3, 1, 4)", {"qkv", "B", "h", "N", "d_k"});
        step.einops = "b n three h d -> three b h n d";
        return step;
    });
    HeadTensors qkv_heads{heads.select(0, 0), heads.select(0, 1), heads.select(0, 2)};
    const Operand operands[] = {Operand::Q, Operand::K, Operand::V};
    const Tensor* parts[] = {&qkv_heads.q, &qkv_heads.k, &qkv_heads.v};
    for (std::size_t i = 0; i < 3; ++i) {
        trace.show(*parts[i], [&] {
            const std::string name(1, "QKV"[i]);
            Step step = described(operands[i], StepKind::Unbind, 5, "unbind", name,
                                  name + " = qkv[" + std::to_string(i) + "]", {"B", "h", "N", "d_k"});
            step.einops = "b n (three h d) -> three b h n d";  // q, k, v = rearrange(qkv, ...)
            return step;
        });
    }
    return forward_from_heads(w, std::move(qkv_heads), masks, s, options, trace, in.x_q);  // 6-14
}

}  // namespace mha
