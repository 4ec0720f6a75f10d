#pragma once
// Number and shape spellings every printer shares: "263,168", "(B=2, N=8, d_model=256)".

#include "core/pass/step.h"
#include "core/tensor/tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mha {

// "1,048,576"
std::string with_commas(std::uint64_t n);

// "1 character", "4 tokens": the count and its noun, plural unless the count is 1.
std::string counted(std::size_t count, const std::string& noun);

// printf's %.*f
std::string fixed(double value, int digits);

// printf's %.*e: "2.4e-07" with one digit.
std::string scientific(double value, int digits);

// "1,-1,0" (the command line's lists), or with a separator "5, 4, 3": the numbers, joined.
template <typename Number>
std::string joined(const std::vector<Number>& numbers, const std::string& separator = ",") {
    std::string text;
    for (Number n : numbers) text += (text.empty() ? "" : separator) + std::to_string(n);
    return text;
}

// A JSON number of `digits` significant digits (nine: any float32 reads back unchanged), or
// null for NaN and infinities, which JSON has not.
std::string json_number(double value, int digits = 9);

// 1e-06, 500000, 6.9282: a number as short as it reads (a stream's default, 6 digits).
std::string compact(double value);

// "(B=2, h=4, N=8, d_k=64)": each size after its name from the shape legend.
std::string named_shape(const std::vector<std::string>& dims, const Shape& shape);

// The number a view prints for a step: "14", or "b14" for the backward's undoing of step 14.
std::string step_number(const Step& step);

}  // namespace mha
