// The next-character prediction and the maps of every layer.

#include "show/model_view.h"

#include <algorithm>
#include <cmath>

#include "io/printable.h"
#include "show/format.h"
#include "show/text_layout.h"

namespace mha {

std::vector<Prediction> top_predictions(const Tensor& logits, std::size_t count) {
    const Tensor packed = logits.contiguous();
    const std::size_t n = packed.size(1), v = packed.size(2);
    const float* last = packed.data() + (n - 1) * v;
    const double top = *std::max_element(last, last + v);
    std::vector<Prediction> all;
    double sum = 0.0;
    for (std::size_t t = 0; t < v; ++t) {
        all.push_back({t, std::exp(double(last[t]) - top)});
        sum += all.back().probability;
    }
    for (Prediction& p : all) p.probability /= sum;
    count = std::min(count, v);
    std::partial_sort(
        all.begin(), all.begin() + count, all.end(),
        [](const Prediction& a, const Prediction& b) { return a.probability > b.probability; });
    all.resize(count);
    return all;
}

std::string character_name(std::uint32_t code) {
    if (code == 0) return "<unknown>";
    const std::string utf8 = utf8_encode(code);
    // a control or bidi character from the file shows as U+FFFD
    return "'" + sanitized(utf8) + "'";
}

void print_prediction(std::ostream& out, const std::vector<Prediction>& predictions,
                      const std::vector<std::uint32_t>& vocab) {
    std::vector<std::string> pieces;
    for (const Prediction& p : predictions)
        pieces.push_back(character_name(vocab[p.token]) + " " + fixed(100.0 * p.probability, 1) +
                         "%");
    out << "\n";
    write_filled(out, pieces, "   ", "next character: ", "                ");
}

std::vector<WeightMap> layer_maps(const Tensor& weights, std::size_t layer,
                                  const std::vector<std::size_t>& heads, bool mean) {
    const std::size_t n = weights.size(2);
    std::vector<bool> causal(n * n);  // (N, N): key j is hidden from query i when j > i
    for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = i + 1; j < n; ++j) causal[i * n + j] = true;
    }
    std::vector<WeightMap> maps =
        weight_maps(weights, MapChoice{heads, mean, {}},
                    std::vector<std::vector<bool>>(weights.size(1), causal));
    for (WeightMap& map : maps) map.title = "layer " + std::to_string(layer) + " " + map.title;
    return maps;
}

std::vector<WeightMap> model_maps(const std::vector<Tensor>& weights,
                                  const std::vector<std::size_t>& heads, bool mean) {
    std::vector<WeightMap> maps;
    for (std::size_t l = 0; l < weights.size(); ++l) {
        for (WeightMap& map : layer_maps(weights[l], l, heads, mean)) {
            maps.push_back(std::move(map));
        }
    }
    return maps;
}

}  // namespace mha
