// Picks the heads to draw and averages them.

#include "show/weight_maps.h"

#include <cmath>

#include "show/format.h"

namespace mha {

namespace {

WeightMap head_map(const Tensor& weights, std::size_t head, const MapChoice& choice,
                   const std::vector<std::vector<bool>>& blocked) {
    const std::size_t n = weights.size(2), m = weights.size(3);
    WeightMap map;
    map.title = "head " + std::to_string(head);
    if (head < choice.head_names.size()) map.title += ": " + choice.head_names[head];
    map.rows = n;
    map.cols = m;
    const float* plane = weights.data() + head * n * m;  // batch 0
    map.values.assign(plane, plane + n * m);
    if (head < blocked.size() && blocked[head].size() == n * m) map.blocked = blocked[head];
    return map;
}

WeightMap mean_map(const Tensor& weights, const std::vector<std::vector<bool>>& blocked) {
    const std::size_t h = weights.size(1), n = weights.size(2), m = weights.size(3);
    WeightMap map;
    map.title = "mean of " + std::to_string(h) + " heads";
    map.rows = n;
    map.cols = m;
    std::vector<double> sums(n * m, 0.0);
    for (std::size_t head = 0; head < h; ++head) {
        const float* plane = weights.data() + head * n * m;
        for (std::size_t i = 0; i < n * m; ++i) sums[i] += plane[i];
    }
    for (double sum : sums) map.values.push_back(float(sum / double(h)));
    if (blocked.size() == h && blocked.front().size() == n * m) {
        map.blocked.assign(n * m, true);
        for (const std::vector<bool>& head : blocked) {
            for (std::size_t i = 0; i < n * m; ++i) map.blocked[i] = map.blocked[i] && head[i];
        }
    }
    return map;
}

}  // namespace

float WeightRange::position(float w) const {
    if (!(high > low)) return 0.5f;
    return (w - low) / (high - low);
}

std::string WeightRange::text() const { return fixed(low, 4) + ".." + fixed(high, 4); }

WeightRange weight_range(const WeightMap& map, bool per_map) {
    if (!per_map) return {};
    WeightRange range{INFINITY, -INFINITY};
    for (std::size_t i = 0; i < map.values.size(); ++i) {
        const float w = map.values[i];
        if (!std::isfinite(w) || (!map.blocked.empty() && map.blocked[i])) continue;
        range.low = std::fmin(range.low, w);
        range.high = std::fmax(range.high, w);
    }
    if (range.low > range.high) return {};  // nothing left to span: the fixed scale
    return range;
}

bool any_masked(const std::vector<WeightMap>& maps) {
    for (const WeightMap& map : maps) {
        for (bool hidden : map.blocked) {
            if (hidden) return true;
        }
    }
    return false;
}

std::vector<WeightMap> weight_maps(const Tensor& weights, const MapChoice& choice,
                                   const std::vector<std::vector<bool>>& blocked) {
    const Tensor packed = weights.contiguous();
    std::vector<WeightMap> maps;
    if (choice.heads.empty()) {
        if (!choice.mean) {
            for (std::size_t head = 0; head < packed.size(1); ++head)
                maps.push_back(head_map(packed, head, choice, blocked));
        }
    } else {
        for (std::size_t head : choice.heads)
            maps.push_back(head_map(packed, head, choice, blocked));
    }
    if (choice.mean) maps.push_back(mean_map(packed, blocked));
    return maps;
}

std::vector<std::string> position_labels(std::size_t count,
                                         const std::vector<std::string>& tokens) {
    std::vector<std::string> labels;
    for (std::size_t i = 0; i < count; ++i)
        labels.push_back(std::to_string(i) + (i < tokens.size() ? " " + tokens[i] : ""));
    return labels;
}

std::vector<std::string> key_labels(const RunInfo& info) {
    return position_labels(info.kv_len + info.appended_keys,
                           info.self_attention ? info.tokens : std::vector<std::string>{});
}

}  // namespace mha
