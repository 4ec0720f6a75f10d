#pragma once
// Refusing NaN and infinity in arrays read from files, with the tensor and the index named.

#include "io/npy.h"

#include <string>

namespace mha {

// Which infinities an array may hold: none (inputs, weights), or -inf (float masks, where
// it blocks a key).
enum class Infinities { None, NegativeAllowed };

// Throws mha::Error when a value of `array`, as float32, is NaN or an infinity `allowed`
// does not permit: "<what> has NaN at index (0, 2, 5) (3 values are not finite); ...".
void check_finite(const npy::Array& array, const std::string& what, Infinities allowed);

// The array as a float32 tensor: refused unless it is float ("<what> is int64, expected
// float32 or float64") and finite (check_finite).
Tensor float_tensor(const npy::Array& array, const std::string& what);

}  // namespace mha
