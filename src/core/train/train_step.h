#pragma once
// One training step of the character model (core/forms/model.h), as train.py takes it: the
// forward and backward of the mean cross-entropy, the gradients clipped by their global norm,
// AdamW on every parameter at the step's learning rate.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/forms/model.h"
#include "core/tensor/workspace.h"
#include "core/train/optimizer.h"

namespace mha {

// What a step needs besides the data; the defaults are the kjv-2x4 recipe.
struct TrainRecipe {
    std::size_t steps = 3000;   // the schedule's length (learning_rate's `steps`)
    std::size_t warmup = 100;   // linear warm-up steps
    double lr = 3e-3;           // the peak learning rate
    double clip = 1.0;          // the global gradient norm clipped to
    AdamWSettings adamw;
    // Positions in a micro-batch: train_step runs its batch as micro-batches of this many
    // positions (whole rows, at least one; larger when more than max_micro_batches would be
    // needed), side by side on the threads, and sums their losses and gradients in order.
    // The sums differ from one pass over the whole batch by float rounding only, and not
    // with the thread count.
    std::size_t micro_batch = 512;
};

// The most micro-batches a step takes: each holds a gradient of every parameter until the
// step adds them up.
inline constexpr std::size_t max_micro_batches = 8;

// How train_step divides `batch` rows of `row_length` positions: `count` micro-batches of
// `rows` rows (the last may have fewer); none for no rows.
struct MicroBatches {
    std::size_t rows, count;
};
MicroBatches micro_batches(std::size_t batch, std::size_t row_length, std::size_t micro_batch);

// Everything that changes from step to step: with the same batches, a state saved and loaded
// again goes on bit for bit.
struct TrainState {
    Model model;
    std::vector<AdamWMoments> moments;  // one per parameter, in model_arrays' order
    std::uint64_t step = 0;             // steps taken so far
    // the activations and their gradients of the micro-batches each thread runs, one
    // workspace a thread, their memory kept for the next step (not state: nothing of it is
    // saved or compared)
    std::vector<Workspace> workspaces;
};

struct StepResult {
    double loss = 0.0;       // the mean cross-entropy before the update, in nats
    double grad_norm = 0.0;  // the global gradient norm before clipping
    double lr = 0.0;         // the learning rate this step used
};

// A fresh state for `model`: zero moments, step 0.
TrainState start_training(Model model);

// One step on `batch` rows: tokens and targets (batch · N ids, row by row, N ≤ context), in
// micro-batches (TrainRecipe::micro_batch). Fixed-order sums throughout: any thread count
// gives the same bits. A micro-batch runs on one thread when there are several; with one,
// its operations are split over the threads.
StepResult train_step(TrainState& state, const std::vector<std::size_t>& tokens,
                      const std::vector<std::size_t>& targets, std::size_t batch,
                      const TrainRecipe& recipe, std::size_t threads);

}  // namespace mha
