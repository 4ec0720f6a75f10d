// Summary statistics of a tensor's values: two passes in double over the finite values.

#include "show/summary.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mha {

// Reads the values in place (a copy only when the tensor is not contiguous), so a view of the
// scores costs no memory beyond them; the same sums, in the same order, as over a list of them.
TensorStats stats_of(const Tensor& t) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    TensorStats stats{nan, nan, nan, nan, 0, 0};
    const Tensor packed = t.contiguous();
    const float* begin = packed.data();
    const float* end = begin + (begin ? packed.numel() : 0);
    const auto finite = [](float v) { return std::isfinite(v); };
    double sum = 0;
    std::size_t count = 0;
    for (const float* v = begin; v != end; ++v) {
        if (std::isnan(*v))
            ++stats.nan_count;
        else if (std::isinf(*v))
            ++stats.inf_count;
        else
            sum += *v, ++count;
    }
    if (count == 0) return stats;

    stats.mean = sum / double(count);
    double squares = 0;
    stats.min = stats.max = *std::find_if(begin, end, finite);
    for (const float* v = begin; v != end; ++v) {
        if (!finite(*v)) continue;
        squares += (*v - stats.mean) * (*v - stats.mean);
        stats.min = std::min<double>(stats.min, *v);
        stats.max = std::max<double>(stats.max, *v);
    }
    stats.std = std::sqrt(squares / double(count));
    return stats;
}

}  // namespace mha
