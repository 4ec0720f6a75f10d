// Summary statistics of a tensor's values: two passes in double over the finite values.

#include "show/summary.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace mha {

TensorStats stats_of(const Tensor& t) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    TensorStats stats{nan, nan, nan, nan, 0, 0};
    std::vector<double> finite;
    for (float v : t.to_vector()) {
        if (std::isnan(v)) ++stats.nan_count;
        else if (std::isinf(v)) ++stats.inf_count;
        else finite.push_back(v);
    }
    if (finite.empty()) return stats;

    double sum = 0;
    for (double v : finite) sum += v;
    stats.mean = sum / double(finite.size());
    double squares = 0;
    for (double v : finite) squares += (v - stats.mean) * (v - stats.mean);
    stats.std = std::sqrt(squares / double(finite.size()));
    const auto [lowest, highest] = std::minmax_element(finite.begin(), finite.end());
    stats.min = *lowest;
    stats.max = *highest;
    return stats;
}

}  // namespace mha
