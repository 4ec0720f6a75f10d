// The variants of the forward pass: which one runs.

#include "app/run/variants.h"

#include "core/backward/block_backward.h"
#include "core/backward/mla_backward.h"
#include "core/forms/block.h"
#include "core/forms/decode.h"
#include "core/forms/fused_qkv.h"
#include "core/forms/mla_pass.h"
#include "core/forms/per_head.h"
#include "core/tensor/workspace.h"
#include "io/dry.h"
#include "core/pass/shape_checks.h"

namespace mha {

ForwardResult run_pass(const Config& c, const PassProblem& p, Tracer& tracer) {
    if (c.block) {
        return forward_block(p.weights, *p.block, *c.block, p.inputs, p.masks, p.options, tracer);
    }
    switch (c.form) {
        case Form::Decode:
            return decode(p.weights, p.inputs, p.masks, p.options, tracer);
        case Form::FusedQkv:
            return forward_fused_qkv(p.weights, p.inputs, p.masks, p.options, tracer);
        case Form::PerHead:
            return forward_per_head(p.weights, p.inputs, p.masks, p.options, tracer);
        case Form::Mla:
            return forward_mla(*p.mla, p.inputs.x_q, p.masks, p.options, tracer);
        case Form::Packed:
            break;
    }
    return forward(p.weights, p.inputs, p.masks, p.options, tracer);
}

ComputedRun run_backward(const Config& c, const PassProblem& p, Tracer& tracer) {
    if (c.block) {
        BlockBackwardResult r = block_forward_backward(p.weights, *p.block, *c.block, p.inputs,
                                                       p.masks, p.options, p.grad_output, tracer);
        Gradients grads;
        grads.input = std::move(r.grads.input);
        grads.params = std::move(r.grads.attention);
        return {std::move(r.forward), std::move(grads), std::move(r.grads.block)};
    }
    BackwardResult r =
        c.form == Form::Mla
            ? forward_backward_mla(*p.mla, p.inputs.x_q, p.masks, p.options, p.grad_output, tracer)
            : forward_backward(p.weights, p.inputs, p.masks, p.options, c.form, p.grad_output,
                               tracer);
    return {std::move(r.forward), std::move(r.grads), {}};
}

PassProblem without_values(const PassProblem& p) {
    PassProblem d = p;
    d.weights = without_values(p.weights);
    if (p.block) d.block = without_values(*p.block);
    if (p.mla) d.mla = without_values(*p.mla);
    d.inputs = without_values(p.inputs);
    d.masks.attn_mask = p.masks.attn_mask.without_values();
    d.masks.key_padding = p.masks.key_padding.without_values();
    d.grad_output = p.grad_output.without_values();
    return d;
}

Tally dry_tally(const Config& c, const PassProblem& p) {
    PassProblem d = without_values(p);
    Workspace workspace = Workspace::dry();
    d.options.workspace = &workspace;
    d.options.threads = 1;
    Tally tally;
    if (c.backward) {
        run_backward(c, d, tally);
    } else {
        run_pass(c, d, tally);
    }
    return tally;
}

}  // namespace mha
