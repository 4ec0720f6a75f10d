#pragma once
// Summary statistics of a tensor's values, for the printers' closing lines.

#include "core/tensor/tensor.h"

#include <cstddef>

namespace mha {

// mean, std, min and max ignore NaN and ±inf (all NaN when no value is finite);
// std is the population standard deviation (divides by the count, like np.std).
struct TensorStats {
    double mean;
    double std;
    double min;
    double max;
    std::size_t nan_count;
    std::size_t inf_count;
};

TensorStats stats_of(const Tensor& t);

}  // namespace mha
