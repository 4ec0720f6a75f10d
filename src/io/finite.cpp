// The first bad value of an array and how many there are, for one clear message.

#include "io/finite.h"

#include "core/error.h"

#include <cmath>
#include <sstream>

namespace mha {

namespace {

bool acceptable(float value, Infinities allowed) {
    if (std::isfinite(value)) return true;
    return allowed == Infinities::NegativeAllowed && std::isinf(value) && value < 0;
}

// The flat C-order index as one index per dimension: "(0, 2, 5)"; "()" for a scalar.
std::string index_of(std::size_t flat, const Shape& shape) {
    Shape index(shape.size());
    for (std::size_t d = shape.size(); d-- > 0;) {
        index[d] = flat % shape[d];
        flat /= shape[d];
    }
    return to_string(index);
}

// "NaN", "inf", "-inf", or the float64 value that became an infinity as float32.
std::string describe(double original, float value) {
    if (std::isnan(value)) return "NaN";
    if (std::isinf(original)) return original < 0 ? "-inf" : "inf";
    std::ostringstream text;
    text << original << " (beyond float32's range)";
    return text.str();
}

}  // namespace

void check_finite(const npy::Array& array, const std::string& what, Infinities allowed) {
    std::size_t bad = 0;
    std::size_t first = 0;
    for (std::size_t i = 0; i < array.values.size(); ++i) {
        if (acceptable(static_cast<float>(array.values[i]), allowed)) continue;
        if (bad++ == 0) first = i;
    }
    if (bad == 0) return;
    const double original = array.values[first];
    std::string message = what + " has " + describe(original, static_cast<float>(original)) +
                          " at index " + index_of(first, array.shape);
    if (bad > 1) message += " (" + std::to_string(bad) + " values are not finite)";
    message += allowed == Infinities::None ? "; every value must be a finite float32"
                                           : "; a float mask may hold finite values and -inf only";
    throw Error(message);
}

Tensor float_tensor(const npy::Array& array, const std::string& what) {
    if (array.kind != 'f')
        throw Error(what + " is " + array.dtype_name() + ", expected float32 or float64");
    check_finite(array, what, Infinities::None);
    return npy::to_tensor(array);
}

}  // namespace mha
