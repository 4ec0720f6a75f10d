#pragma once
// The (N, M) attention-weight matrices a heatmap or an SVG draws: chosen heads of
// one batch entry of ForwardResult::weights (B, h, N, M), and their mean over heads
// (what PyTorch returns with average_attn_weights=True).

#include "core/tensor.h"

#include <cstddef>
#include <string>
#include <vector>

namespace mha {

struct WeightMap {
    std::string title;          // "head 0: previous token", "mean of 4 heads"
    std::size_t rows = 0;       // N queries
    std::size_t cols = 0;       // M keys
    std::vector<float> values;  // (N, M) row-major

    float at(std::size_t query, std::size_t key) const { return values[query * cols + key]; }
};

struct MapChoice {
    std::vector<std::size_t> heads;       // empty: every head
    bool mean = false;                    // add the mean over all heads
    std::vector<std::string> head_names;  // empty, or one per head
};

// weights (B, h, N, M), batch 0.
std::vector<WeightMap> weight_maps(const Tensor& weights, const MapChoice& choice);

// Row labels: "3 sat" with tokens (one per query), otherwise "3".
std::vector<std::string> position_labels(std::size_t count, const std::vector<std::string>& tokens);

}  // namespace mha
