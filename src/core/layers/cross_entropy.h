#pragma once
// Cross-entropy over the vocabulary, averaged over every position (F.cross_entropy with its
// default mean), and its adjoint dlogits = (softmax − onehot) / rows; templated for float32
// and double.

#include <cstddef>
#include <vector>

#include "core/tensor/tensor.h"
#include "core/tensor/workspace.h"

namespace mha {

// Returns the sum over rows of log Σ_v e^(z_v) − z_target, each row shifted by its maximum
// (stable for any finite logits), summed in double in row order, divided by `mean_over`;
// writes dlogits = (softmax(z) − onehot(target)) / mean_over. Rows run on `threads` threads.
// mean_over is rows for the mean of these rows, or a whole batch's positions when they are
// one micro-batch of it.
//   logits, dlogits: (rows, V)   targets: (rows), each < V
template <typename T>
double cross_entropy_rows(const T* logits, const std::size_t* targets, std::size_t rows,
                          std::size_t V, std::size_t threads, T* dlogits, std::size_t mean_over);

struct CrossEntropy {
    double loss;     // mean over the B·N positions (or its share of mean_over's), in nats
    Tensor dlogits;  // (B, N, V) ∂loss/∂logits
};

// cross_entropy_rows on logits (B, N, V) and targets (B·N, row by row), its mean over the
// B·N positions, or over mean_over when that is not 0; throws mha::Error when the counts
// differ or a target is not below V. dlogits from the workspace when there is one; on dry
// logits, shape-only and the loss 0.
CrossEntropy cross_entropy(const Tensor& logits, const std::vector<std::size_t>& targets,
                           std::size_t threads, std::size_t mean_over = 0,
                           Workspace* workspace = nullptr);

}  // namespace mha
