// Entropy and peak key per query row, per head.

#include "show/head_summary.h"

#include <algorithm>
#include <cmath>

#include "show/format.h"
#include "show/text_layout.h"

namespace mha {

namespace {

constexpr float flat_ratio = 1.01f;  // a row whose non-zero weights are within 1% is flat

std::size_t peak_of(const float* row, std::size_t count) {
    float top = 0.0f, low = 1.0f;
    std::size_t peak = 0, nonzero = 0;
    for (std::size_t key = 0; key < count; ++key) {
        if (std::isnan(row[key])) return no_peak;
        if (row[key] > top) {
            top = row[key];
            peak = key;
        }
        if (row[key] > 0.0f) {
            ++nonzero;
            low = std::min(low, row[key]);
        }
    }
    if (nonzero == 0 || (nonzero > 1 && top <= low * flat_ratio)) return no_peak;
    return peak;
}

}  // namespace

double row_entropy(const float* row, std::size_t count) {
    double entropy = 0.0;
    for (std::size_t key = 0; key < count; ++key) {
        const double w = row[key];
        if (std::isnan(w)) return w;
        if (w > 0.0) entropy -= w * std::log(w);
    }
    return entropy;
}

std::vector<HeadPattern> head_patterns(const Tensor& weights) {
    const Tensor packed = weights.contiguous();
    const std::size_t h = packed.size(1), n = packed.size(2), m = packed.size(3);
    std::vector<HeadPattern> patterns;
    for (std::size_t head = 0; head < h; ++head) {
        HeadPattern pattern{0.0, {}};
        std::size_t counted = 0;
        for (std::size_t query = 0; query < n; ++query) {
            const float* row = packed.data() + (head * n + query) * m;  // batch 0
            const double entropy = row_entropy(row, m);
            if (!std::isnan(entropy)) {
                pattern.mean_entropy += entropy;
                ++counted;
            }
            pattern.peaks.push_back(peak_of(row, m));
        }
        pattern.mean_entropy = counted > 0 ? pattern.mean_entropy / double(counted) : std::nan("");
        patterns.push_back(pattern);
    }
    return patterns;
}

void print_head_summary(std::ostream& out, const std::vector<HeadPattern>& patterns,
                        const std::vector<std::string>& head_names) {
    out << "\nheads, batch 0: mean entropy of a query's weights in nats (0: all on one key),\n"
        << "and the key each query attends to most, for queries 0, 1, 2, ... (~: even)\n";
    std::size_t name_width = 0;
    for (const std::string& name : head_names)
        name_width = std::max(name_width, display_width(name));
    for (std::size_t head = 0; head < patterns.size(); ++head) {
        std::string first = "  head " + std::to_string(head);
        if (name_width > 0)
            first +=
                "  " + padded_right(head < head_names.size() ? head_names[head] : "", name_width);
        first += "  entropy " + fixed(patterns[head].mean_entropy, 2) + "  peaks";
        std::vector<std::string> peaks;
        for (std::size_t peak : patterns[head].peaks)
            peaks.push_back(peak == no_peak ? "~" : std::to_string(peak));
        write_filled(out, peaks, " ", first + " ", std::string(display_width(first) + 1, ' '));
    }
}

}  // namespace mha
