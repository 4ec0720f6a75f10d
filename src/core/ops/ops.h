#pragma once
// Stateless kernels on raw strided memory: linear layers, matrix products,
// scaling, masks and softmax. Plain loops, accumulated in double.

#include "core/tensor/tensor.h"

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

// c = a b: (n, k) x (k, m) -> (n, m), c written row-major with rows c_row_stride apart.
void matmul(const MatrixView& a, const MatrixView& b, float* c, std::size_t c_row_stride);

void scale(float* values, std::size_t count, float factor);

// The causal rule, in one place. Bottom-right (a KV cache: the N queries are the last N of
// the M positions): query i sees keys j <= i + M - N. Top-left (scaled_dot_product_attention's
// is_causal=True, torch.tril(ones(N, M))): j <= i. The two agree when N = M.
enum class CausalAlign { BottomRight, TopLeft };

// One past the last key query i (of n) may see among m keys under the causal rule.
std::size_t causal_key_end(std::size_t i, std::size_t n, std::size_t m, CausalAlign align);

// Step 8 on one head's (N, M) scores, row-major: add an (N, M) additive mask;
// add a (M) key-padding row to every query row; block the keys the causal rule hides.
void add_mask(float* scores, const float* mask, std::size_t count);
void add_key_padding(float* scores, const float* padding, std::size_t n, std::size_t m);
void apply_causal(float* scores, std::size_t n, std::size_t m,
                  CausalAlign align = CausalAlign::BottomRight);

// Softmax over each of `rows` rows of `cols` values (row-major, contiguous),
// subtracting the row maximum first. A row whose entries are all -inf has no
// key to attend to: NaN like PyTorch, or zeros when zero_masked_rows.
// Returns how many such rows there were.
std::size_t softmax_rows(float* values, std::size_t rows, std::size_t cols, bool zero_masked_rows);

}  // namespace mha
