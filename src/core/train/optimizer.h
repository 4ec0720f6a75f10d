#pragma once
// What the trainer does with the gradients, as examples/models/train.py does it in PyTorch:
// clip them by their global norm, step AdamW, and follow the warm-up plus cosine learning rate.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor/tensor.h"

namespace mha {

// torch.optim.AdamW's settings; the defaults are the kjv-2x4 recipe (examples/models/README.md).
struct AdamWSettings {
    double beta1 = 0.9;
    double beta2 = 0.95;
    double eps = 1e-8;
    double weight_decay = 0.01;  // for the parameters takes_weight_decay picks, 0 for the rest
};

// AdamW's running averages for one parameter, zero before the first step.
struct AdamWMoments {
    Tensor m;  // (the parameter's shape) first moment
    Tensor v;  // (the parameter's shape) second moment
};

// Whether train.py decays the parameter of this state-dict name and rank: the matrices
// (2 dimensions) except the embeddings; never biases, norms or embeddings.
bool takes_weight_decay(const std::string& name, std::size_t dims);

// Zero moments for a parameter of this shape.
AdamWMoments adamw_moments(const Shape& shape);

// One step of PyTorch's AdamW on one contiguous parameter, in float32 in PyTorch's order:
//   p ← p · (1 − lr·wd);  m ← β1·m + (1 − β1)·g;  v ← β2·v + (1 − β2)·g²;
//   p ← p − lr/(1 − β1^t) · m / (√v / √(1 − β2^t) + eps)
// `step` counts from 1 (the bias corrections); weight_decay is 0 or settings.weight_decay.
// Element-wise, split over `threads`.   param, grad: one shape
void adamw_step(Tensor& param, const Tensor& grad, AdamWMoments& moments, std::uint64_t step,
                double lr, double weight_decay, const AdamWSettings& settings, std::size_t threads);

// torch.nn.utils.clip_grad_norm_: the 2-norm of every gradient together (each tensor's norm
// summed in double, then the norms' squares in order); every gradient multiplied by
// min(1, max_norm / (norm + 1e-6)). Returns the norm before clipping.
double clip_grad_norm(const std::vector<Tensor*>& grads, double max_norm);

// train.py's learning rate at `step` (from 0) of `steps`: linear warm-up to `peak` over
// `warmup` steps (peak · (step + 1) / warmup), then a cosine from peak down to peak / 10.
double learning_rate(std::size_t step, std::size_t steps, double peak, std::size_t warmup);

}  // namespace mha
