#pragma once
// What mha train's command line asks for: the settings of a new run, the files and the limits.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "app/train/train_checkpoint.h"

namespace mha {

// The bounds of --context (train.cpp's parse_context says why 2).
inline constexpr std::size_t min_context = 2, max_context = 65536;

struct TrainOptions {
    TrainSettings settings;  // the defaults: kjv-2x4's recipe
    std::optional<double> time_limit;
    std::size_t threads = 0;  // 0: the hardware's
    std::string corpus, out = "mha-train.npz", log, resume, save_batches;
    std::size_t eval_every = 50;
    std::uint64_t max_memory = std::uint64_t(2) << 30;
    std::optional<double> max_time;  // unset: no limit
    bool help = false;
};

}  // namespace mha
