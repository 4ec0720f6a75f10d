#pragma once
// --explain: one plain paragraph per kind of step, on what it does and why, for the trace,
// --step, the Markdown hand-out and the HTML lesson page.

#include "core/step.h"

#include <string>

namespace mha {

// The paragraph for the step's kind (its name, and its number where one name has two
// jobs: view at 4 and 13, transpose at 5 and 11, project at 1-3, 14 and 23); "" for none.
std::string explanation(const Step& step);

// "4 view": steps of one kind in a row (step 4's view of Q, K and V) share one paragraph.
std::string step_kind(const Step& step);

}  // namespace mha
