#pragma once
// The (N, M) attention-weight matrices a heatmap or an SVG draws: chosen heads of
// one batch entry of ForwardResult::weights (B, h, N, M), and their mean over heads
// (what PyTorch returns with average_attn_weights=True).

#include "core/tensor/tensor.h"
#include "show/run_info.h"

#include <cstddef>
#include <string>
#include <vector>

namespace mha {

struct WeightMap {
    std::string title;          // "head 0: previous token", "mean of 4 heads"
    std::size_t rows = 0;       // N queries
    std::size_t cols = 0;       // M keys
    std::vector<float> values;  // (N, M) row-major
    std::vector<bool> blocked;  // (N, M) row-major: keys the mask hides; empty when not known

    float at(std::size_t query, std::size_t key) const { return values[query * cols + key]; }
    bool is_blocked(std::size_t query, std::size_t key) const {
        return !blocked.empty() && blocked[query * cols + key];
    }
};

// The weights a colour scale spans: 0..1 (fixed), or one map's own min..max (--scale auto),
// over its finite weights the mask leaves.
struct WeightRange {
    float low = 0.0f, high = 1.0f;

    // w's place on the colour scale, 0..1; a map whose weights are all equal sits at 0.5.
    float position(float w) const;
    // "0.0123..0.4567"
    std::string text() const;
};

WeightRange weight_range(const WeightMap& map, bool per_map);

// Whether the mask hides any key of any of the maps (the pictures then explain the hatching).
bool any_masked(const std::vector<WeightMap>& maps);

struct MapChoice {
    std::vector<std::size_t> heads;       // empty: every head
    bool mean = false;                    // add the mean over all heads
    std::vector<std::string> head_names;  // empty, or one per head
};

// weights (B, h, N, M), batch 0. blocked: empty, or one (N, M) row-major grid per head of
// the keys the mask hides (the mean map hides a key only when every head does).
std::vector<WeightMap> weight_maps(const Tensor& weights, const MapChoice& choice,
                                   const std::vector<std::vector<bool>>& blocked = {});

// Row labels: "3 sat" with tokens (one per query), otherwise "3".
std::vector<std::string> position_labels(std::size_t count, const std::vector<std::string>& tokens);

// The keys' labels, one per column of a map: the queries' tokens when the keys are the same
// positions (self-attention), then the positions appended to K and V (add_bias_kv,
// add_zero_attn) by number alone.
std::vector<std::string> key_labels(const RunInfo& info);

}  // namespace mha
