// The variants of the forward pass: which one runs.

#include "app/run/variants.h"

#include <algorithm>
#include <cmath>

#include "app/run/kv_pool.h"
#include "app/run/kv_quant_options.h"
#include "app/run/non_finite.h"
#include "core/error.h"
#include "core/backward/block_backward.h"
#include "core/backward/mla_backward.h"
#include "core/forms/block.h"
#include "core/forms/decode.h"
#include "core/forms/draft.h"
#include "core/forms/fused_qkv.h"
#include "core/forms/mla_decode.h"
#include "core/forms/mla_pass.h"
#include "core/forms/per_head.h"
#include "core/forms/prefill.h"
#include "core/tensor/workspace.h"
#include "io/dry.h"
#include "show/token_elision.h"
#include "core/pass/shape_checks.h"

namespace mha {

ForwardResult run_pass(const Config& c, const PassProblem& p, Tracer& tracer) {
    if (c.block) {
        return forward_block(p.weights, *p.block, *c.block, p.inputs, p.masks, p.options, tracer);
    }
    switch (c.form) {
        case Form::Decode: {
            if (!c.draft_tree.empty())
                return verify_draft(p.weights, p.inputs, p.masks, p.options, c.draft_tree, tracer);
            const std::optional<KvPaging> paging =
                kv_paging(c, p.inputs.x_q.size(0), p.inputs.x_q.size(1));
            const KvPaging* paged = paging ? &*paging : nullptr;
            if (!c.prefill_chunks.empty())
                return prefill(p.weights, p.inputs, p.masks, p.options, c.prefill_chunks, tracer,
                               paged);
            return decode(p.weights, p.inputs, p.masks, p.options, tracer, paged,
                          kv_quant_of(c));
        }
        case Form::FusedQkv:
            return forward_fused_qkv(p.weights, p.inputs, p.masks, p.options, tracer);
        case Form::PerHead:
            return forward_per_head(p.weights, p.inputs, p.masks, p.options, tracer);
        case Form::Mla: {
            if (!c.mla_decode) return forward_mla(*p.mla, p.inputs.x_q, p.masks, p.options, tracer);
            const std::optional<KvPaging> paging =
                kv_paging(c, p.inputs.x_q.size(0), p.inputs.x_q.size(1));
            return decode_mla(*p.mla, p.inputs.x_q, p.masks, p.options, tracer,
                              paging ? &*paging : nullptr);
        }
        case Form::Packed:
            break;
    }
    return forward(p.weights, p.inputs, p.masks, p.options, tracer);
}

namespace {

ComputedRun computed_backward(const Config& c, const PassProblem& p, Tracer& tracer) {
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

bool finite(const Tensor& t) {
    if (t.dry()) return true;
    const Tensor values = t.contiguous();
    return std::all_of(values.data(), values.data() + values.numel(),
                       [](float v) { return std::isfinite(v); });
}

// Every gradient the run computed (the empty ones of absent weights included).
std::vector<const Tensor*> gradients_of(const ComputedRun& r) {
    const Gradients& g = r.grads;
    const Weights& w = g.params;
    const MlaWeights& m = g.mla;
    const BlockWeights& b = r.block_grads;
    return {&g.input,  &g.key,    &g.value,         &w.w_q,          &w.w_k,   &w.w_v,
            &w.w_o,    &w.b_q,    &w.b_k,           &w.b_v,          &w.b_o,   &w.q_norm,
            &w.k_norm, &w.bias_k, &w.bias_v,        &w.w_g,          &w.b_g,   &m.w_q,
            &m.w_kv_a, &m.kv_norm, &m.w_kv_b,       &m.w_o,          &b.norm1_weight,
            &b.norm1_bias, &b.norm2_weight, &b.norm2_bias, &b.w_1,    &b.b_1,   &b.w_2,
            &b.b_2};
}

}  // namespace

ComputedRun run_backward(const Config& c, const PassProblem& p, Tracer& tracer) {
    ComputedRun r = computed_backward(c, p, tracer);
    // The inputs were checked finite as they were read; a finite output (no fully blocked
    // row, whose NaN PyTorch gives too) with a gradient beyond float32 is refused, not saved.
    const std::vector<const Tensor*> grads = gradients_of(r);
    if (!finite(r.forward.output) ||
        std::all_of(grads.begin(), grads.end(), [](const Tensor* t) { return finite(*t); }))
        return r;
    NonFiniteFinder finder;
    computed_backward(c, p, finder);
    throw Error("the gradients overflow float32 though the inputs and the output are finite: " +
                (finder.where.empty() ? std::string("a saved gradient holds infinity or NaN")
                                      : finder.value + " first appears in " + finder.where) +
                "; dO or the inputs are too large for float32 (scale them down)");
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

namespace {

// Runs the problem dry, with one thread, in `workspace` (a dry one), traced by `tracer`.
void run_dry(const Config& c, const PassProblem& p, Workspace& workspace, Tracer& tracer) {
    PassProblem d = without_values(p);
    d.options.workspace = &workspace;
    d.options.threads = 1;
    if (c.backward) {
        run_backward(c, d, tracer);
    } else {
        run_pass(c, d, tracer);
    }
}

}  // namespace

Tally dry_tally(const Config& c, const PassProblem& p, bool elide_tokens) {
    Workspace workspace = Workspace::dry();
    Tally tally;
    TokenElision elided(tally, nullptr);
    run_dry(c, p, workspace, elide_tokens ? static_cast<Tracer&>(elided) : tally);
    return tally;
}

std::uint64_t dry_peak_bytes(const Config& c, const PassProblem& p) {
    Workspace workspace = Workspace::dry();
    NullTracer quiet;
    run_dry(c, p, workspace, quiet);
    return workspace.peak_bytes();
}

}  // namespace mha
