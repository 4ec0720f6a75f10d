#pragma once
// The "inputs + weights" stage: weights, inputs and masks from files or seeds,
// sizes reconciled with the options, and the memory budget checked before
// anything large is allocated.

#include <optional>
#include "app/cli/config.h"
#include "app/run/layout.h"
#include "app/run/variants.h"

#include "core/forms/block.h"
#include "core/pass/attention.h"
#include "core/pass/mla.h"
#include "io/block_weights.h"
#include "io/weights.h"
#include "show/run_info.h"

namespace mha {

// The pass's own (PassProblem: weights, inputs, masks, options, dO) and what the rest of the
// run needs.
struct Problem : PassProblem {
    InputLayout layout = InputLayout::BatchFirst;  // of the input files; --save writes it back
    StateDictNames weight_names;  // how --save and --gradcheck name the weights' gradients
    MlaNames mla_names = MlaNames::HuggingFace;  // --form mla --backward: the same for MLA's
    BlockNaming block_naming = BlockNaming::Torch;  // --backward --block: how --save names the
                                                    //  block's own (io/block_weights.h)
    RunInfo info;                  // what the printers say about this run
    bool mask_looks_keep = false;  // a bool/int --mask read as block hides the diagonal or a row
    double estimated_seconds = 0;  // from the run's multiply-adds (app/run/time_guard.h)
    // The pass may stop on a score beyond float32 (core/forms/score_bound.h): compute it once
    // before printing, so that such a run prints its error and nothing else.
    bool compute_first = false;
};

Problem build_problem(const Config& config);

// The pass of a run with these options, sizes, --block's d_ff and path (--form mla: and its
// sizes), dry: its tensors have shapes and no values (Tensor::shape_only). What --shapes-only
// traces, and what the computed run's memory and multiply-adds are counted from before any
// weight exists. The seeded weights have a bias on every projection or none, QK-norm as
// --qk-norm says.
PassProblem dry_problem(const Config& config, const Sizes& sizes, AttentionPath path,
                        std::size_t d_ff, const std::optional<MlaSizes>& mla = std::nullopt);

// --shapes-only: a dry problem (core/tensor/tensor.h, Tensor::shape_only) of the sizes and
// options, with what the printers say: no file read, no tensor storage handed out.
Problem build_shapes(const Config& config);

}  // namespace mha
