#pragma once
// `mha bench --train`: the training step of mha train's default recipe timed (forward,
// backward, clipping, AdamW), and with --compare-torch PyTorch training the same model at each
// of its thread settings, the engines taking turns (two steps each, the second timed) so that
// all see the same load.

#include <cstddef>

namespace mha {

struct TrainBenchOptions {
    std::size_t repeat = 5;   // timed steps per engine, after one warm-up step each
    std::size_t threads = 2;  // mha's threads (it also runs on 1)
    bool quick = false;       // a tiny model instead of the recipe's, for a smoke test
    bool compare_torch = false;
    bool json = false;
};

// Prints the table (or JSON); throws mha::Error when PyTorch's side fails.
void run_train_bench(const TrainBenchOptions& options);

}  // namespace mha
