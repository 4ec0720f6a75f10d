// Number and shape spellings every printer shares.

#include "show/format.h"

#include <cstdio>
#include <iterator>

namespace mha {

std::string with_commas(std::uint64_t n) {
    std::string digits = std::to_string(n);
    for (std::size_t i = digits.size(); i > 3; i -= 3) digits.insert(i - 3, ",");
    return digits;
}

std::string fixed(double value, int digits) {
    char text[64];
    std::snprintf(text, sizeof text, "%.*f", digits, value);
    return text;
}

std::string human_bytes(std::uint64_t bytes) {
    if (bytes < 1024) return std::to_string(bytes) + " B";
    const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
    double amount = double(bytes) / 1024;
    std::size_t unit = 0;
    for (; amount >= 1024 && unit + 1 < std::size(units); ++unit) amount /= 1024;
    std::string number = fixed(amount, 1);
    if (number.size() > 2 && number.compare(number.size() - 2, 2, ".0") == 0) number.resize(number.size() - 2);
    return number + " " + units[unit];
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

}  // namespace mha
