#pragma once
// Cross-entropy over the vocabulary, averaged over every position (F.cross_entropy with its
// default mean), and its adjoint dlogits = (softmax − onehot) / rows; templated for float32
// and double.

#include <cstddef>
#include <vector>

#include "core/tensor/tensor.h"

namespace mha {

// Returns the mean over rows of log Σ_v e^(z_v) − z_target, each row shifted by its maximum
// (stable for any finite logits), summed in double in row order; writes
// dlogits = (softmax(z) − onehot(target)) / rows. Rows run on `threads` threads.
//   logits, dlogits: (rows, V)   targets: (rows), each < V
template <typename T>
double cross_entropy_rows(const T* logits, const std::size_t* targets, std::size_t rows,
                          std::size_t V, std::size_t threads, T* dlogits);

struct CrossEntropy {
    double loss;     // mean over the B·N positions, in nats
    Tensor dlogits;  // (B, N, V) ∂loss/∂logits
};

// cross_entropy_rows on logits (B, N, V) and targets (B·N, row by row); throws mha::Error
// when the counts differ or a target is not below V.
CrossEntropy cross_entropy(const Tensor& logits, const std::vector<std::size_t>& targets,
                           std::size_t threads);

}  // namespace mha
