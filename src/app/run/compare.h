#pragma once
// --compare H1,H2,...: the same seeded layer at several head counts, side by side.

#include <ostream>

#include "app/cli/config.h"

namespace mha {

// One row per head count: d_k, parameters, the weights per head, multiply-adds, the output's
// norm, the mean attention entropy and the wall time; then what stayed the same.
void run_compare(const Config& config, std::ostream& out);

}  // namespace mha
