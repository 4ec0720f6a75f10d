#pragma once
// --head-contributions: the output split by head, before W_o mixes them.

#include <ostream>

#include "app/cli/config.h"
#include "app/run/problem.h"
#include "core/pass/attention.h"

namespace mha {

// Runs the pass again to keep concat (B, N, d_model) from step 13, then for each head i
// C_i = concat[:, :, i·d_k:(i+1)·d_k] @ W_o[:, i·d_k:(i+1)·d_k].T, (B, N, d_model); prints
// each head's norm and share, and how far sum_i C_i + b_o is from `result.output`.
void report_contributions(std::ostream& out, const Config& config, const Problem& problem,
                          const ForwardResult& result);

}  // namespace mha
