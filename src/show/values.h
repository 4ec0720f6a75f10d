#pragma once
// A tensor's values written the way NumPy prints an array.

#include "core/tensor/tensor.h"

#include <string>

namespace mha {

// What print(a) shows after np.set_printoptions(precision=4), NumPy's defaults
// otherwise: nested brackets, aligned columns, lines wrapped at 75 columns, and
// above 1000 elements only 3 items at each edge of every dimension with "...".
// Every non-empty line starts with indent; there is no final newline.
std::string format_values(const Tensor& t, const std::string& indent);

}  // namespace mha
