// Reference kernels: straightforward loops with double accumulators.

#include "core/ops/ops.h"

#include <cmath>
#include <limits>

namespace mha {

MatrixView head_matrix(const Tensor& t, std::size_t b, std::size_t h) {
    const Strides& s = t.strides();
    return {t.data() + b * s[0] + h * s[1], t.size(2), t.size(3), s[2], s[3]};
}

void matmul(const MatrixView& a, const MatrixView& b, float* c, std::size_t c_row_stride) {
    for (std::size_t r = 0; r < a.rows; ++r) {
        for (std::size_t col = 0; col < b.cols; ++col) {
            double sum = 0.0;
            for (std::size_t i = 0; i < a.cols; ++i) sum += double(a(r, i)) * b(i, col);
            c[r * c_row_stride + col] = float(sum);
        }
    }
}

void scale(float* values, std::size_t count, float factor) {
    for (std::size_t i = 0; i < count; ++i) values[i] *= factor;
}

void add_mask(float* scores, const float* mask, std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) scores[i] += mask[i];
}

void add_key_padding(float* scores, const float* padding, std::size_t n, std::size_t m) {
    for (std::size_t r = 0; r < n; ++r) add_mask(scores + r * m, padding, m);
}

std::size_t causal_key_end(std::size_t i, std::size_t n, std::size_t m, CausalAlign align) {
    if (align == CausalAlign::TopLeft) return std::min(m, i + 1);  // j <= i
    return i + m + 1 > n ? std::min(m, i + m + 1 - n) : 0;  // j <= i + m - n, without underflow
}

void apply_causal(float* scores, std::size_t n, std::size_t m, CausalAlign align) {
    const float blocked = -std::numeric_limits<float>::infinity();
    for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = causal_key_end(i, n, m, align); j < m; ++j)
            scores[i * m + j] = blocked;
    }
}

static bool softmax_row(float* row, std::size_t cols, bool zero_masked_rows) {
    float max = -std::numeric_limits<float>::infinity();
    for (std::size_t c = 0; c < cols; ++c) max = std::fmax(max, row[c]);
    if (cols == 0) return false;  // no key at all: an empty row, not a blocked one
    if (max == -std::numeric_limits<float>::infinity()) {
        const float fill = zero_masked_rows ? 0.0f : std::numeric_limits<float>::quiet_NaN();
        for (std::size_t c = 0; c < cols; ++c) row[c] = fill;
        return true;
    }
    double sum = 0.0;
    for (std::size_t c = 0; c < cols; ++c) {
        row[c] = std::exp(row[c] - max);
        sum += row[c];
    }
    for (std::size_t c = 0; c < cols; ++c) row[c] = float(row[c] / sum);
    return false;
}

std::size_t softmax_rows(float* values, std::size_t rows, std::size_t cols, bool zero_masked_rows) {
    std::size_t masked = 0;
    for (std::size_t r = 0; r < rows; ++r) {
        masked += softmax_row(values + r * cols, cols, zero_masked_rows) ? 1 : 0;
    }
    return masked;
}

}  // namespace mha
