// ALiBi slopes and bias; the sliding window with sinks.

#include "core/position/position_bias.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mha {

static std::vector<double> power_of_two_slopes(std::size_t heads) {
    std::vector<double> slopes(heads);
    for (std::size_t i = 0; i < heads; ++i) {
        slopes[i] = std::exp2(-8.0 * double(i + 1) / double(heads));
    }
    return slopes;
}

std::vector<double> alibi_slopes(std::size_t heads) {
    std::size_t power = 1;
    while (power * 2 <= heads) power *= 2;
    std::vector<double> slopes = power_of_two_slopes(power);
    const std::vector<double> doubled = power_of_two_slopes(2 * power);
    for (std::size_t i = 0; slopes.size() < heads; i += 2) slopes.push_back(doubled[i]);
    return slopes;
}

void add_alibi(const ScoreBlock& block, double slope) {
    for (std::size_t r = 0; r < block.n; ++r) {
        const double p = double(block.first_query + r);
        float* row = block.data + r * block.row_stride;
        for (std::size_t c = 0; c < block.m; ++c) {
            row[c] = float(row[c] - slope * std::fabs(p - double(block.first_key + c)));
        }
    }
}

bool window_allows(const Window& window, std::size_t p, std::size_t j) {
    return j <= p && (j + window.size > p || j < window.sinks);
}

void apply_window(const ScoreBlock& block, const Window& window) {
    const float blocked = -std::numeric_limits<float>::infinity();
    for (std::size_t r = 0; r < block.n; ++r) {
        float* row = block.data + r * block.row_stride;
        for (std::size_t c = 0; c < block.m; ++c) {
            if (!window_allows(window, block.first_query + r, block.first_key + c))
                row[c] = blocked;
        }
    }
}

std::size_t window_cache_positions(const Window& window, std::size_t m) {
    const std::size_t recent = std::min(window.size, m);
    const std::size_t sinks = std::min(window.sinks, m - recent);
    return recent + sinks;
}

}  // namespace mha
