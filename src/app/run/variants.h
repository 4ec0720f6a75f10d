#pragma once
// Which form of the forward pass a run uses: the packed forward() (default),
// --fused-qkv, --per-head, --decode T or --block (decided once by settle(), app/cli/config.cpp).

#include <string>

#include "app/cli/config.h"
#include "app/run/problem.h"
#include "core/backward/backward.h"
#include "core/pass/attention.h"

namespace mha {

// Runs the form of the pass the configuration asks for.
ForwardResult run_pass(const Config& config, const Problem& problem, Tracer& tracer);

// What a run computed: the forward and, with --backward, the gradients.
struct ComputedRun {
    ForwardResult forward;
    Gradients grads;           // attention's weights' and the input's (--block: the block's input)
    BlockWeights block_grads;  // --block: ∂L/∂ norm1, norm2, linear1 and linear2
};

// --backward: the form's forward pass (or the block's), then its backward of
// L = Σ output ∘ problem.grad_output, traced in that order (core/backward/backward.h,
// block_backward.h).
ComputedRun run_backward(const Config& config, const Problem& problem, Tracer& tracer);

// How many Step records run_pass will report: the plan of the form (core/pass/plan.h), and the
// block's own seven steps around it.
std::size_t planned_steps(const Config& config, const Problem& problem);

}  // namespace mha
