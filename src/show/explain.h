#pragma once
// --explain: one plain paragraph per kind of step, on what it does and why, for the trace,
// --step, the Markdown hand-out and the HTML lesson page.

#include "core/pass/step.h"

#include <string>

namespace mha {

// The paragraph for the step's kind (and, for the projections, the operand it yields); ""
// for none. Steps in a row with the same paragraph (step 4's view of Q, K and V) print it once.
std::string explanation(const Step& step);

}  // namespace mha
