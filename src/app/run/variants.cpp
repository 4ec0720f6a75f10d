// The variants of the forward pass: which one runs.

#include "app/run/variants.h"

#include "core/backward/block_backward.h"
#include "core/backward/mla_backward.h"
#include "core/forms/block.h"
#include "core/forms/decode.h"
#include "core/forms/fused_qkv.h"
#include "core/forms/mla_pass.h"
#include "core/forms/per_head.h"
#include "core/pass/plan.h"
#include "core/pass/shape_checks.h"

namespace mha {

ForwardResult run_pass(const Config& c, const Problem& p, Tracer& tracer) {
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

ComputedRun run_backward(const Config& c, const Problem& p, Tracer& tracer) {
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

std::size_t planned_steps(const Config& c, const Problem& p) {
    if (c.form == Form::Mla) {  // its plan is made from the MLA sizes, as forward_mla makes it
        PassSpec spec = mla_pass_spec(*p.mla, p.inputs.x_q, p.masks, p.options);
        spec.backward = c.backward;
        return plan_pass(spec).size();
    }
    if (c.block) {
        PassSpec spec = block_spec(p.weights, *p.block, *c.block, p.inputs, p.masks, p.options);
        spec.backward = c.backward;
        return plan_pass(spec).size();
    }
    const Sizes s = check_pass(p.weights, p.inputs, p.masks, p.options);
    PassSpec spec = pass_spec(s, p.weights, p.inputs, p.masks, p.options, c.form);
    spec.backward = c.backward;
    return plan_pass(spec).size();
}

}  // namespace mha
