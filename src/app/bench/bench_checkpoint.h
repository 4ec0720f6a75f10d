#pragma once
// `mha bench --checkpoint DIR`: the whole forward to logits of a Hugging Face model folder,
// timed at a few prompt lengths with its weights already in memory (the load timed apart),
// with the peak memory of a load and a forward; with --compare-torch PyTorch runs the same
// maths eagerly in float32 on the same weights and tokens.

#include <cstddef>
#include <string>
#include <vector>

#include "app/bench/timing.h"

namespace mha {

struct CheckpointBenchOptions {
    std::string dir;
    std::vector<std::size_t> lengths = {128, 1024};  // N of each row
    std::size_t repeat = 5;
    std::size_t threads = 2;
    bool compare_torch = false;
    bool json = false;
    Timing timing = Timing::Turns;
};

// Prints the table (or JSON); throws mha::Error for a folder that is not one, a length beyond
// the model's context, or PyTorch's side failing.
void run_checkpoint_bench(const CheckpointBenchOptions& options);

// The prompt of n tokens the bench runs: ids below vocab, drawn from seed 0.
std::vector<std::size_t> bench_tokens(std::size_t n, std::size_t vocab);

}  // namespace mha
