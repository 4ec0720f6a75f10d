// Soft-capping the scores.

#include "core/ops/softcap.h"

#include <cmath>

namespace mha {

void softcap(float* values, std::size_t count, double cap) {
    for (std::size_t i = 0; i < count; ++i) values[i] = float(cap * std::tanh(values[i] / cap));
}

void softcap_slopes(const float* raw, std::size_t count, float factor, double cap, float* slopes) {
    for (std::size_t j = 0; j < count; ++j) {
        const double t = std::tanh(double(raw[j] * factor) / cap);
        slopes[j] = float(1.0 - t * t);
    }
}

}  // namespace mha
