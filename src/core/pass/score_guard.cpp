// Scores beyond float32: the largest |q| and |k| of a unit bound its scores; a unit the bound
// does not clear is checked score by score.

#include "core/pass/score_guard.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>

#include "core/error.h"

namespace mha {

namespace {

constexpr double float_max = std::numeric_limits<float>::max();

// |v|'s bits with the sign cleared: as integers they order as |v| does, infinity and NaN
// above every finite value.
std::int32_t magnitude_bits(const float* v) {
    std::int32_t bits;
    std::memcpy(&bits, v, sizeof bits);
    return bits & 0x7fffffff;
}

float from_bits(std::int32_t bits) {
    float value;
    std::memcpy(&value, &bits, sizeof value);
    return value;
}

// The largest |value| of a row of n floats, `stride` apart: +inf or NaN when one of them is.
float row_magnitude(const float* row, std::size_t n, std::size_t stride) {
    std::int32_t top = 0;
    for (std::size_t c = 0; c < n; ++c) top = std::max(top, magnitude_bits(row + c * stride));
    return from_bits(top);
}

// The largest |value| of m (rows, cols) with col_stride 1, its rows `row_stride` apart (one
// long row when they follow each other): eight lanes of integer maxima that every row feeds,
// which compilers vectorise.
float rows_magnitude(MatrixView m) {
    if (m.row_stride == m.cols) m = {m.data, 1, m.rows * m.cols, m.rows * m.cols, 1};
    constexpr std::size_t lanes = 8;
    std::int32_t top[lanes] = {};
    const std::size_t whole = m.cols / lanes * lanes;
    for (std::size_t r = 0; r < m.rows; ++r) {
        const float* row = m.data + r * m.row_stride;
        for (std::size_t c = 0; c < whole; c += lanes) {
            for (std::size_t l = 0; l < lanes; ++l) {
                const std::int32_t bits = magnitude_bits(row + c + l);
                top[l] = top[l] < bits ? bits : top[l];
            }
        }
        for (std::size_t c = whole; c < m.cols; ++c)
            top[0] = std::max(top[0], magnitude_bits(row + c));
    }
    return from_bits(*std::max_element(top, top + lanes));
}

// The largest |value| of m (rows, d_k). A value that is not finite is a projection that
// overflowed float32: an Error naming its row.
double largest_magnitude(const MatrixView& m, const char* name, const AttentionUnit& u,
                         std::size_t first_row) {
    if (m.col_stride == 1) {  // one scan of every row
        const float all = rows_magnitude(m);
        if (all <= std::numeric_limits<float>::max()) return all;  // else: find the row below
    }
    float largest = 0.0f;
    for (std::size_t r = 0; r < m.rows; ++r) {
        const float magnitude = row_magnitude(m.data + r * m.row_stride, m.cols, m.col_stride);
        if (!(magnitude <= std::numeric_limits<float>::max())) {
            throw Error(std::string(name) + " overflows float32 at batch " +
                        std::to_string(u.batch) + ", head " + std::to_string(u.head) +
                        ", position " + std::to_string(first_row + r) +
                        ": the inputs or weights are too large for float32");
        }
        largest = std::max(largest, magnitude);
    }
    return largest;
}

std::string overflow_message(const AttentionUnit& u, std::size_t n, std::size_t m, double score,
                             double terms, float factor) {
    char figures[200];
    std::snprintf(figures, sizeof figures,
                  "q·k times the scale %.3g is %.3g (its terms add up to %.3g), beyond "
                  "float32's largest value %.3g",
                  double(factor), score, terms, float_max);
    return "the score of batch " + std::to_string(u.batch) + ", head " + std::to_string(u.head) +
           ", query " + std::to_string(u.first_query + n) + ", key " + std::to_string(m) +
           " overflows float32: " + figures + "; the inputs or weights are too large for float32";
}

}  // namespace

bool needs_prescale(const AttentionUnit& u, float factor) {
    const double bound = double(u.q.cols) * largest_magnitude(u.q, "Q", u, u.first_query) *
                         largest_magnitude(u.k, "K", u, 0) * std::max(1.0, double(factor));
    if (bound < float_max / 2) return false;
    bool prescale = false;
    for (std::size_t n = 0; n < u.q.rows; ++n) {
        for (std::size_t m = 0; m < u.k.rows; ++m) {
            double dot = 0.0, terms = 0.0;
            for (std::size_t j = 0; j < u.q.cols; ++j) {
                const double product = double(u.q(n, j)) * double(u.k(m, j));
                dot += product;
                terms += std::abs(product);
            }
            if (terms * factor >= float_max * 0.999) {
                throw Error(overflow_message(u, n, m, dot * factor, terms * factor, factor));
            }
            prescale = prescale || terms >= float_max / 2;
        }
    }
    return prescale;
}

AttentionUnit with_scaled_q(AttentionUnit u, float factor, std::vector<float>& scaled) {
    const std::size_t rows = u.q.rows, cols = u.q.cols;
    scaled.resize(rows * cols);
    for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t c = 0; c < cols; ++c) scaled[r * cols + c] = u.q(r, c) * factor;
    }
    u.q = {scaled.data(), rows, cols, cols, 1};
    return u;
}

}  // namespace mha
