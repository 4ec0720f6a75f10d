#pragma once
// The notes under a step, worded from the facts the core computed (Step::facts) and
// the step's name: which mask and how, the scale factor, what grouped-query sharing
// saves, which path ran. The core formats no text; every printer calls this.

#include <string>
#include <vector>

#include "core/pass/step.h"

namespace mha {

std::vector<std::string> step_notes(const Step& step);

}  // namespace mha
