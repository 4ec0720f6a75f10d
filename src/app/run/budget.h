#pragma once
// The run's plan: threads, the path of steps 6-10 (standard or streaming), and the
// memory budget they must fit.

#include <cstddef>
#include <cstdint>
#include <optional>

#include "app/cli/config.h"
#include "app/run/variants.h"
#include "core/pass/attention.h"
#include "core/pass/mla.h"

namespace mha {

struct RunPlan {
    AttentionPath path = AttentionPath::Standard;
    std::size_t threads = 1;
    std::uint64_t bytes = 0;  // what the run needs on its path, as checked against --max-memory
};

// Picks the threads (--threads, or one per 2^23 multiply-adds up to the hardware's)
// and the path (--attention, or auto), and throws mha::Error, naming the path and the
// bytes needed, when the run would hold more than --max-memory: the inputs, the
// weights, the masks already loaded, what the chosen form of the pass
// allocates with these threads (its tensors counted by running `dry`, the run's problem
// without values, on each path), what the views add after it (heatmap and SVG maps, a
// second pass for --ablate-head), and what --save takes. Auto streams only a normaliser the
// streaming path has.
// For --form mla, `mla` gives its sizes (and `sizes` are its naive form's, mla_naive_sizes):
// the weights are its own.
RunPlan plan_run(const Config& config, const Sizes& sizes, std::size_t d_ff,
                 const PassProblem& dry, const std::optional<MlaSizes>& mla = std::nullopt);

// What the form of the pass allocates on `path` with `threads` threads: its tensors at their
// peak (with --backward, the backward's and the gradients), counted by running `dry` (the run's
// problem without values) dry, and every thread's kernel scratch; a decode adds what it holds
// beside its tensors (cached_form_outside_bytes) and, with --kv-quant, the float decode a trace
// measures against. --gradcheck's double-precision reference is counted by its formula.
std::uint64_t pass_bytes(const Config& config, const Sizes& sizes, const PassProblem& dry,
                         AttentionPath path, std::size_t threads,
                         const std::optional<MlaSizes>& mla = std::nullopt);

}  // namespace mha
