#pragma once
// `mha bench --train`: the training step of mha train's default recipe timed (forward,
// backward, clipping, AdamW), and with --compare-torch PyTorch training the same model at each
// of its thread settings in two forms (its modules, and its attention composed from torch ops),
// the engines taking turns (two steps each, the second timed) or running in tight blocks, so
// that all see the same load.

#include <cstddef>

#include "app/bench/timing.h"

namespace mha {

struct TrainBenchOptions {
    std::size_t repeat = 5;   // timed steps per engine, after one warm-up step each
    std::size_t threads = 2;  // mha's threads (it also runs on 1)
    bool quick = false;       // a tiny model instead of the recipe's, for a smoke test
    bool compare_torch = false;
    bool json = false;
    Timing timing = Timing::Turns;  // how the engines share the machine
};

// Prints the table (or JSON); throws mha::Error when PyTorch's side fails.
void run_train_bench(const TrainBenchOptions& options);

}  // namespace mha
