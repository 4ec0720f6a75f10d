#pragma once
// Which form of the forward pass a run uses: the packed forward() (default),
// --fused-qkv, --per-head, --decode T or --block (decided once by settle(), app/cli/config.cpp).

#include <optional>

#include "app/cli/config.h"
#include "core/backward/backward.h"
#include "core/forms/block.h"
#include "core/pass/attention.h"
#include "core/pass/mla.h"
#include "core/pass/trace.h"

namespace mha {

// What a pass runs on: its weights, inputs, masks and options (and, for a backward, dO).
// Their values may be absent (Tensor::without_values): the run is then a dry run.
struct PassProblem {
    Weights weights;
    std::optional<BlockWeights> block;  // --block only
    std::optional<MlaWeights> mla;      // --form mla only (weights stays empty)
    Inputs inputs;
    Masks masks;
    Tensor grad_output;  // (B, N, d_model) dO, batch-first; --backward, --gradcheck
    ForwardOptions options;
};

// The same problem without its values (Tensor::without_values): what a dry run takes.
PassProblem without_values(const PassProblem& problem);

// Runs the form of the pass the configuration asks for.
ForwardResult run_pass(const Config& config, const PassProblem& problem, Tracer& tracer);

// What a run computed: the forward and, with --backward, the gradients.
struct ComputedRun {
    ForwardResult forward;
    Gradients grads;           // attention's weights' and the input's (--block: the block's input)
    BlockWeights block_grads;  // --block: ∂L/∂ norm1, norm2, linear1 and linear2
};

// --backward: the form's forward pass (or the block's), then its backward of
// L = Σ output ∘ problem.grad_output, traced in that order (core/backward/backward.h,
// block_backward.h).
ComputedRun run_backward(const Config& config, const PassProblem& problem, Tracer& tracer);

// The run's steps and multiply-adds (with --backward, the backward's too), counted by running
// it dry: the problem's tensors without their values, in a dry workspace. With elide_tokens,
// the steps a dry decode shows (show/token_elision.h) and their multiply-adds.
Tally dry_tally(const Config& config, const PassProblem& problem, bool elide_tokens = false);

// The most bytes the run's tensors hold at once (with --backward, the backward's and the
// gradients too), counted by running it dry in a dry workspace: not the problem's own inputs,
// weights and masks, nor the kernels' per-thread scratch (scratch_bytes, core/pass/costs.h).
std::uint64_t dry_peak_bytes(const Config& config, const PassProblem& problem);

}  // namespace mha
