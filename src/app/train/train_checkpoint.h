#pragma once
// mha train's --out file: a model file `mha --model` loads (io/model_file.h), plus, under
// train.*, what --resume needs to go on bit for bit: AdamW's moments per parameter, the step,
// the recipe and sizes, the seed, the corpus's fingerprint, every step's loss and the
// evaluation history (so the panel's sparkline survives a resume).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/train/train_step.h"
#include "io/model_init.h"
#include "io/npy.h"
#include "show/train_panel.h"

namespace mha {

// What a run is fixed to from its first step: a resumed run must match it.
struct TrainSettings {
    ModelSizes sizes;
    std::size_t batch = 32;
    std::uint64_t seed = 0;
    TrainRecipe recipe;
};

struct Checkpoint {
    TrainState state;
    TrainSettings settings;
    std::uint64_t corpus_characters = 0, corpus_fingerprint = 0;  // Corpus's
    std::uint64_t eval_every = 0;  // steps between evaluations (0: a file of an older mha)
    double seconds = 0.0;                                         // training time so far
    std::vector<double> step_losses;                              // (state.step) every step's loss
    std::vector<TrainEvaluation> history;                         // every evaluation, oldest first
};

// Writes the checkpoint atomically (io/atomic_file.h): on any failure the old file stays.
void save_checkpoint(const std::string& path, const Checkpoint& checkpoint);

// Reads a checkpoint save_checkpoint wrote; throws mha::Error naming the file and the array
// for a file that is no checkpoint, or a damaged one, or one needing more than max_memory.
Checkpoint load_checkpoint(const std::string& path, std::uint64_t max_memory);

// The same from the arrays of an .npz already read (named `path` in the errors).
Checkpoint checkpoint_from_arrays(const std::map<std::string, npy::Array>& arrays,
                                  const std::string& path);

}  // namespace mha
