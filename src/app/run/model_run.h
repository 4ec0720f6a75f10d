#pragma once
// --model FILE --text "...": a trained character model run on the text, every layer through
// the block pass, one layer traced and drawn (--layer), all layers' heads at once, the
// next-character prediction and the heads' role scores.

#include <functional>
#include <memory>
#include <ostream>

#include "app/cli/config.h"
#include "app/run/problem.h"
#include "show/report.h"

namespace mha {

// The report a run prints to, given how many steps it will show (--step says "step k of n").
using ReportFor = std::function<std::unique_ptr<Report>(std::size_t steps)>;

// --threads for a model's or a checkpoint's run: the number given, or one thread.
std::size_t model_run_threads(const Config& config);

// Prints to out, warnings to err; throws mha::Error for a bad model file, a layer or
// head out of range and a text longer than the model's context.
void run_model(const Config& config, const ReportFor& report_for, std::ostream& out,
               std::ostream& err);

// --model --shapes-only: the model's run on --text done dry (its arrays without values: every
// step traced, nothing computed) on the report; warnings to err.
void run_model_shapes(const Config& config, const ReportFor& report_for, std::ostream& err);

}  // namespace mha
