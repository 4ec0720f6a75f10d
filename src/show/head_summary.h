#pragma once
// The heads' patterns as numbers: for each head of batch 0, the mean entropy of its
// query rows and the key each query attends to most.

#include "core/tensor/tensor.h"

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

namespace mha {

inline constexpr std::size_t no_peak = std::size_t(-1);  // a flat or fully masked row

struct HeadPattern {
    double mean_entropy;             // nats, over rows that are not NaN
    std::vector<std::size_t> peaks;  // per query: its largest weight's key, or no_peak
                                     // when two or more keys share the weight evenly
                                     // (within 1%) or the row is NaN
};

// Entropy -Σ w ln w of one row of weights, in nats (0·ln 0 = 0); NaN if any weight is.
double row_entropy(const float* row, std::size_t count);

// weights (B, h, N, M): the pattern of every head of batch 0.
std::vector<HeadPattern> head_patterns(const Tensor& weights);

// "heads, batch 0: ..." one line (or more, wrapped) per head.
void print_head_summary(std::ostream& out, const std::vector<HeadPattern>& patterns,
                        const std::vector<std::string>& head_names);

}  // namespace mha
