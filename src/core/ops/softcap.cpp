// Soft-capping the scores.

#include "core/ops/softcap.h"

#include <cmath>

namespace mha {

void softcap(float* values, std::size_t count, double cap) {
    for (std::size_t i = 0; i < count; ++i) values[i] = float(cap * std::tanh(values[i] / cap));
}

}  // namespace mha
