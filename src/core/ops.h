#pragma once
// Stateless kernels on raw strided memory: linear layers, matrix products,
// scaling, masks and softmax. Plain loops, accumulated in double.

#include "core/tensor.h"

#include <cstddef>

namespace mha {

// A read-only 2-D window into a tensor's storage: element (r, c) lives at
// data[r * row_stride + c * col_stride].
struct MatrixView {
    const float* data;
    std::size_t rows, cols;
    std::size_t row_stride, col_stride;

    float operator()(std::size_t r, std::size_t c) const {
        return data[r * row_stride + c * col_stride];
    }
    MatrixView transposed() const { return {data, cols, rows, col_stride, row_stride}; }
};

// The (rows, cols) matrix at [b, h] of a 4-D tensor such as (B, h, N, d_k).
MatrixView head_matrix(const Tensor& t, std::size_t b, std::size_t h);

// y[r] = x[r] Wᵀ + b for rows [row_begin, row_end) of x (rows, in) -> y (rows, out).
// x and y contiguous; w (out, in); bias (out) or empty.
void linear_rows(const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& y,
                 std::size_t row_begin, std::size_t row_end);

// c = a b: (n, k) x (k, m) -> (n, m), c written row-major with rows c_row_stride apart.
void matmul(const MatrixView& a, const MatrixView& b, float* c, std::size_t c_row_stride);

void scale(float* values, std::size_t count, float factor);

// Step 8 on one head's (N, M) scores, row-major: add an (N, M) additive mask;
// add a (M) key-padding row to every query row; block keys after the diagonal
// of a bottom-right-aligned causal mask (query i sees key j iff j <= i + M - N).
// The causal rule: query i of n may see key j of m iff j <= i + m - n (bottom-right
// aligned: the queries are the last n of the m positions), written without underflow.
inline bool causally_visible(std::size_t i, std::size_t j, std::size_t n, std::size_t m) {
    return j + n <= i + m;
}

void add_mask(float* scores, const float* mask, std::size_t count);
void add_key_padding(float* scores, const float* padding, std::size_t n, std::size_t m);
void apply_causal(float* scores, std::size_t n, std::size_t m);

// Softmax over each of `rows` rows of `cols` values (row-major, contiguous),
// subtracting the row maximum first. A row whose entries are all -inf has no
// key to attend to: NaN like PyTorch, or zeros when zero_masked_rows.
// Returns how many such rows there were.
std::size_t softmax_rows(float* values, std::size_t rows, std::size_t cols, bool zero_masked_rows);

}  // namespace mha
