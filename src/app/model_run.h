#pragma once
// --model FILE --text "...": a trained character model run on the text, every layer through
// the block pass, one layer traced and drawn (--layer), all layers' heads at once, the
// next-character prediction and the heads' role scores.

#include <ostream>

#include "app/config.h"
#include "show/report.h"

namespace mha {

// Prints to out, warnings to err; throws mha::Error for a bad model file, a layer or
// head out of range and a text longer than the model's context.
void run_model(const Config& config, Report& report, std::ostream& out, std::ostream& err);

}  // namespace mha
