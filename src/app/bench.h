#pragma once
// `mha bench`: times the forward pass on a fixed set of sizes and prints a table
// (or JSON): median ms, GFLOP/s, speed-up over the reference loops, 1 thread
// against all, peak memory, and optionally PyTorch's time for the same sizes.

#include <string>
#include <vector>

#include "app/cli.h"

namespace mha {

// args: what follows "bench" on the command line. Returns the exit status;
// throws mha::Error on bad options.
int run_bench(const std::vector<std::string>& args);

// Its options, for --help and the docs tests.
const CommandInfo& bench_command();

// The times of the runs of one measurement (ms): the fastest, the median, the slowest.
struct Spread {
    double min = 0, median = 0, max = 0;
};

// The spread of `times` (at least one).
Spread spread_of(std::vector<double> times);

}  // namespace mha
