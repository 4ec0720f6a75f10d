#pragma once
// Where a diverged training step's NaN or infinity first appeared.

#include <cstddef>
#include <string>

#include "app/train/train_data.h"
#include "core/train/train_step.h"

namespace mha {

// Where NaN or infinity first appeared: a parameter, else the first tensor of the first row's
// traced forward and backward (layer 0 step by step) that holds one; in words, e.g. "the
// gradient dS (step b9, grad) at (0, 1, 2, 5) of row 3".
std::string first_non_finite(TrainState& state, const Batch& batch, std::size_t threads);

}  // namespace mha
