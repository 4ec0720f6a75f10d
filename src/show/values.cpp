// A strided tensor's values laid out the way NumPy prints an array with
// precision=4: one number format fitted to the values shown, nested brackets,
// lines wrapped at 75 columns, "..." in place of the middle of long axes.

#include "show/values.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <vector>

#include "show/text_layout.h"

namespace mha {

namespace {

constexpr std::size_t summary_threshold = 1000;  // more elements than this: summarise
constexpr std::size_t edge_items = 3;            // items kept at each edge when summarised
constexpr std::size_t line_width = 75;
constexpr int precision = 4;  // most digits after the point

// A finite number cut where NumPy aligns it: "-12" "." "3456" "e+05".
struct Parts {
    std::string whole;     // sign and digits before the point
    std::string fraction;  // digits after the point, trailing zeros trimmed
    std::string exponent;  // "e-05" in scientific notation, else empty
};

Parts split(const std::string& text) {
    const std::size_t e = text.find('e');
    const std::string mantissa = text.substr(0, e);
    const std::size_t point = mantissa.find('.');
    Parts parts;
    parts.whole = mantissa.substr(0, point);
    parts.fraction = point == std::string::npos ? "" : mantissa.substr(point + 1);
    parts.fraction.erase(parts.fraction.find_last_not_of('0') + 1);
    parts.exponent = e == std::string::npos ? "" : text.substr(e);
    return parts;
}

// x with the fewest digits after the point (at most max_digits, then rounded) that
// still read back as the same float32: NumPy's dragon4 in unique mode with a cutoff.
Parts shortest(float x, int max_digits, bool scientific) {
    char text[64];
    for (int digits = 0;; ++digits) {
        std::snprintf(text, sizeof text, scientific ? "%.*e" : "%.*f", digits, double(x));
        if (digits >= max_digits || std::strtof(text, nullptr) == x) break;
    }
    return split(text);
}

// NumPy writes every number in e-notation when the non-zero magnitudes are very
// large, very small or more than 1000 apart (the ratio taken in float32, as NumPy does).
bool needs_scientific(const std::vector<float>& finite) {
    float lowest = std::numeric_limits<float>::infinity();
    float highest = 0;
    for (float v : finite) {
        if (v == 0) continue;
        lowest = std::min(lowest, std::fabs(v));
        highest = std::max(highest, std::fabs(v));
    }
    if (highest == 0) return false;
    const float ratio = highest / lowest;
    return double(highest) >= 1e8 || double(lowest) < 1e-4 || ratio > 1000.0f;
}

// One layout for every element, fitted to the values shown (NumPy's FloatingFormat).
class FloatFormat {
public:
    explicit FloatFormat(const std::vector<float>& values);
    std::string operator()(float x) const;

private:
    bool scientific_ = false;
    int digits_ = precision;     // e-notation: every mantissa gets exactly this many
    std::size_t pad_left_ = 0;   // width before the point
    std::size_t pad_right_ = 0;  // width after the point, exponent included
};

FloatFormat::FloatFormat(const std::vector<float>& values) {
    std::vector<float> finite;
    bool negative_inf = false;
    for (float v : values) {
        if (std::isfinite(v))
            finite.push_back(v);
        else
            negative_inf = negative_inf || v < 0;
    }
    scientific_ = needs_scientific(finite);
    std::size_t fraction = 0;
    std::size_t exponent = 0;
    for (float v : finite) {
        const Parts parts = shortest(v, precision, scientific_);
        pad_left_ = std::max(pad_left_, parts.whole.size());
        fraction = std::max(fraction, parts.fraction.size());
        exponent = std::max(exponent, parts.exponent.size());
    }
    digits_ = int(fraction);
    pad_right_ = fraction + exponent;
    if (finite.size() == values.size()) return;
    const std::size_t longest_word = negative_inf ? 4 : 3;  // "nan", "inf" or "-inf"
    const std::size_t after_whole = pad_right_ + 1;
    if (longest_word > after_whole) pad_left_ = std::max(pad_left_, longest_word - after_whole);
}

std::string FloatFormat::operator()(float x) const {
    const std::size_t width = pad_left_ + 1 + pad_right_;
    if (std::isnan(x)) return padded_left("nan", width);
    if (std::isinf(x)) return padded_left(x < 0 ? "-inf" : "inf", width);
    Parts parts = shortest(x, scientific_ ? digits_ : precision, scientific_);
    if (scientific_) parts.fraction.resize(std::size_t(digits_), '0');
    return padded_left(parts.whole, pad_left_) + "." +
           padded_right(parts.fraction + parts.exponent, pad_right_);
}

std::string without_trailing_spaces(const std::string& line) {
    return line.substr(0, line.find_last_not_of(' ') + 1);
}

// Appends word to line, first moving line into text when the word would end past
// width; a line holding only the hanging indent is never broken (NumPy's _extendLine).
void extend_line(std::string& text, std::string& line, const std::string& word, std::size_t width,
                 const std::string& hanging) {
    if (line.size() + word.size() > width && line.size() > hanging.size()) {
        text += without_trailing_spaces(line) + "\n";
        line = hanging;
    }
    line += word;
}

// NumPy's _formatArray over a tensor read through its strides.
class ArrayPrinter {
public:
    explicit ArrayPrinter(const Tensor& t)
        : t_(t), summarise_(t.numel() > summary_threshold), format_(shown_values()) {}

    std::string print() const {
        std::vector<std::size_t> index;
        return block(index, " ", line_width);
    }

private:
    bool summarised(std::size_t axis) const { return summarise_ && 2 * edge_items < t_.size(axis); }

    // The indices printed along axis: all of them, or the edges when summarised.
    std::vector<std::size_t> shown(std::size_t axis) const {
        const std::size_t n = t_.size(axis);
        std::vector<std::size_t> items;
        for (std::size_t i = 0; i < n; ++i) {
            if (!summarised(axis) || i < edge_items || i >= n - edge_items) items.push_back(i);
        }
        return items;
    }

    std::vector<float> shown_values() const {
        std::vector<float> values;
        std::vector<std::size_t> index;
        collect(index, values);
        return values;
    }

    void collect(std::vector<std::size_t>& index, std::vector<float>& values) const {
        if (index.size() == t_.dim()) {
            values.push_back(t_.at(index));
            return;
        }
        for (std::size_t i : shown(index.size())) {
            index.push_back(i);
            collect(index, values);
            index.pop_back();
        }
    }

    // The sub-array at index, bracketed; its first line carries no indent.
    std::string block(std::vector<std::size_t>& index, const std::string& hanging,
                      std::size_t width) const {
        if (index.size() == t_.dim()) return format_(t_.at(index));
        const std::string body =
            index.size() + 1 == t_.dim() ? row(index, hanging, width) : rows(index, hanging, width);
        return "[" + body.substr(hanging.size()) + "]";
    }

    // The last axis: numbers separated by a space, wrapped before the closing bracket's column.
    std::string row(std::vector<std::size_t>& index, const std::string& hanging,
                    std::size_t width) const {
        const std::size_t axis = index.size();
        const std::vector<std::size_t> items = shown(axis);
        std::string text;
        std::string line = hanging;
        for (std::size_t k = 0; k < items.size(); ++k) {
            if (k == edge_items && summarised(axis)) {
                extend_line(text, line, "...", width - 1, hanging);
                line += ' ';
            }
            index.push_back(items[k]);
            extend_line(text, line, format_(t_.at(index)), width - 1, hanging);
            index.pop_back();
            if (k + 1 < items.size()) line += ' ';
        }
        return text + line;
    }

    // Outer axes: one sub-array per line, with a blank line per axis left below.
    std::string rows(std::vector<std::size_t>& index, const std::string& hanging,
                     std::size_t width) const {
        const std::size_t axis = index.size();
        const std::vector<std::size_t> items = shown(axis);
        const std::string separator(t_.dim() - axis - 1, '\n');
        std::string text;
        for (std::size_t k = 0; k < items.size(); ++k) {
            if (k == edge_items && summarised(axis)) text += hanging + "..." + separator;
            index.push_back(items[k]);
            text += hanging + block(index, hanging + ' ', width - 1);
            index.pop_back();
            if (k + 1 < items.size()) text += separator;
        }
        return text;
    }

    const Tensor& t_;
    bool summarise_;
    FloatFormat format_;  // fitted to shown_values(), so declared after t_ and summarise_
};

std::string indented(const std::string& text, const std::string& indent) {
    std::string result;
    std::size_t start = 0;
    while (start <= text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        if (end > start) result += indent + text.substr(start, end - start);
        if (end < text.size()) result += '\n';
        start = end + 1;
    }
    return result;
}

}  // namespace

std::string format_values(const Tensor& t, const std::string& indent) {
    if (t.empty() || t.numel() == 0) return indent + "[]";
    return indented(ArrayPrinter(t).print(), indent);
}

}  // namespace mha
