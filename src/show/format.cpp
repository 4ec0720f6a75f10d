// Number and shape spellings every printer shares.

#include "show/format.h"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace mha {

std::string with_commas(std::uint64_t n) {
    std::string digits = std::to_string(n);
    for (std::size_t i = digits.size(); i > 3; i -= 3) digits.insert(i - 3, ",");
    return digits;
}

std::string counted(std::size_t count, const std::string& noun) {
    return std::to_string(count) + " " + noun + (count == 1 ? "" : "s");
}

std::string fixed(double value, int digits) {
    char text[64];
    std::snprintf(text, sizeof text, "%.*f", digits, value);
    return text;
}

std::string scientific(double value, int digits) {
    char text[32];
    std::snprintf(text, sizeof text, "%.*e", digits, value);
    return text;
}

std::string json_number(double value, int digits) {
    if (!std::isfinite(value)) return "null";
    char text[32];
    std::snprintf(text, sizeof text, "%.*g", digits, value);
    return text;
}

std::string compact(double value) {
    std::ostringstream text;
    text << value;
    return text.str();
}

std::string named_shape(const std::vector<std::string>& dims, const Shape& shape) {
    std::string text = "(";
    for (std::size_t d = 0; d < shape.size(); ++d) {
        if (d > 0) text += ", ";
        if (d < dims.size()) text += dims[d] + "=";
        text += std::to_string(shape[d]);
    }
    return text + ")";
}

std::string step_number(const Step& step) {
    return (step.backward ? "b" : "") + std::to_string(step.number);
}

}  // namespace mha
