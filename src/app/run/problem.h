#pragma once
// The "inputs + weights" stage: weights, inputs and masks from files or seeds,
// sizes reconciled with the options, and the memory budget checked before
// anything large is allocated.

#include <optional>
#include "app/cli/config.h"
#include "app/run/layout.h"

#include "core/forms/block.h"
#include "core/pass/attention.h"
#include "core/pass/mla.h"
#include "core/pass/plan.h"
#include "io/block_weights.h"
#include "io/weights.h"
#include "show/run_info.h"

namespace mha {

struct Problem {
    Weights weights;
    std::optional<BlockWeights> block;  // --block only
    std::optional<MlaWeights> mla;      // --form mla only (weights stays empty)
    Inputs inputs;
    Masks masks;
    InputLayout layout = InputLayout::BatchFirst;  // of the input files; --save writes it back
    Tensor grad_output;           // (B, N, d_model) dO, batch-first; --backward, --gradcheck
    StateDictNames weight_names;  // how --save and --gradcheck name the weights' gradients
    MlaNames mla_names = MlaNames::HuggingFace;  // --form mla --backward: the same for MLA's
    BlockNaming block_naming = BlockNaming::Torch;  // --backward --block: how --save names the
                                                    //  block's own (io/block_weights.h)
    ForwardOptions options;
    RunInfo info;                  // what the printers say about this run
    bool mask_looks_keep = false;  // a bool/int --mask read as block hides the diagonal or a row
    double estimated_seconds = 0;  // from the run's multiply-adds (app/run/time_guard.h)
    // The pass may stop on a score beyond float32 (core/forms/score_bound.h): compute it once
    // before printing, so that such a run prints its error and nothing else.
    bool compute_first = false;
};

Problem build_problem(const Config& config);

// --shapes-only: the sizes and what the printers say, with no file read and no
// tensor allocated (so no memory budget to check).
struct ShapesProblem {
    PassSpec spec;            // what the plan of the steps depends on (--model: its traced layer)
    std::vector<Step> steps;  // the plan
    RunInfo info;
};

ShapesProblem build_shapes(const Config& config);

}  // namespace mha
