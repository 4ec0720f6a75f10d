#pragma once
// `mha bench`: times the forward pass on a fixed set of sizes and prints a table
// (or JSON): median ms, GFLOP/s, speed-up over the reference loops, 1 thread
// against all, peak memory, and optionally PyTorch's time for the same sizes.

#include <string>
#include <vector>

#include "app/cli/cli.h"

namespace mha {

// args: what follows "bench" on the command line. Returns the exit status;
// throws mha::Error on bad options.
int run_bench(const std::vector<std::string>& args);

// Its options, for --help and the docs tests.
const CommandInfo& bench_command();

}  // namespace mha
