#pragma once
// One run of the tool kept as the trace prints it: each step with its text lines, for
// the quiz and `mha grade`, which take their answers and explanations from it.

#include <string>
#include <vector>

#include "app/cli/config.h"
#include "core/pass/step.h"
#include "show/run_info.h"
#include "show/summary.h"

namespace mha {

// One traced tensor and the lines --trace prints for it.
struct Recorded {
    Step step;  // value is null: the tensor is gone once the pass returns
    std::string text;
};

struct Trace {
    RunInfo info;
    std::string header;  // the lines --trace prints before step 0
    std::vector<Recorded> steps;
    TensorStats output;  // statistics of the output (B, N, d_model)

    // The step a key names by its number and tensor, as the trace prints them ("10 context";
    // backward: "b10 dV", the last such step, so a GQA group's summed dV); throws mha::Error
    // when the trace has none.
    const Recorded& find(int number, const std::string& tensor, bool backward = false) const;
    // The one step of this kind that yields operand; throws mha::Error when the trace has
    // none or several (the per-head form has one per head).
    const Recorded& find(StepKind kind, Operand operand = Operand::None) const;
    // The header line that starts with "parameters:", with a newline.
    std::string parameters_line() const;
};

// Builds the problem of config (validated, e.g. by parse_args) and runs its pass, traced;
// with config.backward the backward's steps follow the forward's.
Trace traced(const Config& config);

}  // namespace mha
