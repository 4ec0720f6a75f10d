// Picks the heads to draw and averages them.

#include "show/weight_maps.h"

namespace mha {

namespace {

WeightMap head_map(const Tensor& weights, std::size_t head, const MapChoice& choice) {
    const std::size_t n = weights.size(2), m = weights.size(3);
    WeightMap map;
    map.title = "head " + std::to_string(head);
    if (head < choice.head_names.size()) map.title += ": " + choice.head_names[head];
    map.rows = n;
    map.cols = m;
    const float* plane = weights.data() + head * n * m;  // batch 0
    map.values.assign(plane, plane + n * m);
    return map;
}

WeightMap mean_map(const Tensor& weights) {
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
    return map;
}

}  // namespace

std::vector<WeightMap> weight_maps(const Tensor& weights, const MapChoice& choice) {
    const Tensor packed = weights.contiguous();
    std::vector<WeightMap> maps;
    if (choice.heads.empty()) {
        if (!choice.mean) {
            for (std::size_t head = 0; head < packed.size(1); ++head)
                maps.push_back(head_map(packed, head, choice));
        }
    } else {
        for (std::size_t head : choice.heads) maps.push_back(head_map(packed, head, choice));
    }
    if (choice.mean) maps.push_back(mean_map(packed));
    return maps;
}

std::vector<std::string> position_labels(std::size_t count,
                                         const std::vector<std::string>& tokens) {
    std::vector<std::string> labels;
    for (std::size_t i = 0; i < count; ++i)
        labels.push_back(std::to_string(i) + (i < tokens.size() ? " " + tokens[i] : ""));
    return labels;
}

}  // namespace mha
