// dW = dYᵀ X, db = Σ dY, dX = dY W on the kernels' gemm, split over output rows or columns.

#include "core/backward/linear_backward.h"

#include <algorithm>
#include <vector>

#include "core/kernels/parallel.h"

namespace mha {

void parallel_gemm(const MatrixView& a, const MatrixView& b, float* c, std::size_t ldc,
                   std::size_t threads) {
    const std::size_t n = a.rows, m = b.cols;
    threads = threads_for(std::uint64_t(n) * a.cols * m, threads);
    if (m <= n) {  // each thread packs its rows of a and all of b
        parallel_for(n, threads, [&](std::size_t begin, std::size_t end) {
            const MatrixView rows{a.data + begin * a.row_stride, end - begin, a.cols,
                                  a.row_stride, a.col_stride};
            gemm(rows, b, c + begin * ldc, ldc);
        });
        return;
    }
    // each thread packs all of a and its columns of b, in blocks of 32 (a multiple of every
    // kernel variant's tile width, so no block adds a partial tile)
    constexpr std::size_t block = 32;
    parallel_for((m + block - 1) / block, threads, [&](std::size_t begin, std::size_t end) {
        const std::size_t j0 = begin * block, j1 = std::min(m, end * block);
        const MatrixView columns{b.data + j0 * b.col_stride, b.rows, j1 - j0, b.row_stride,
                                 b.col_stride};
        gemm(a, columns, c + j0, ldc);
    });
}

Tensor linear_weight_grad(const float* dy, const float* x, std::size_t rows, std::size_t out,
                          std::size_t in, std::size_t threads) {
    Tensor dw({out, in});
    if (rows == 0) return dw;
    if (out <= in) {
        const MatrixView dy_t{dy, out, rows, 1, out};  // dYᵀ (out, rows), a view
        parallel_gemm(dy_t, {x, rows, in, in, 1}, dw.data(), in, threads);
        return dw;
    }
    // dWᵀ (in, out) = Xᵀ dY: the packed left operand read down columns `in` apart rather than
    // `out` apart; each element sums the same products in the same order, so the same bits
    std::vector<float> dw_t(in * out);
    const MatrixView x_t{x, in, rows, 1, in};  // Xᵀ (in, rows), a view
    parallel_gemm(x_t, {dy, rows, out, out, 1}, dw_t.data(), out, threads);
    for (std::size_t o = 0; o < out; ++o) {
        for (std::size_t i = 0; i < in; ++i) dw.data()[o * in + i] = dw_t[i * out + o];
    }
    return dw;
}

namespace {

// Columns summed side by side in linear_bias_grad: their sums stay in registers.
constexpr std::size_t bias_columns = 16;

// What threads_for weighs an element of dY by in linear_bias_grad: its conversion and add in
// double (SSE2, two at a time) cost about as much as 8 of gemm's multiply-adds (4096 rows of
// 192 took 0.18 ms on one thread).
constexpr std::uint64_t bias_work = 8;

// db[j0, j0 + W) = the columns of dy (rows, out) from j0 summed down the rows in order, in
// double.
template <std::size_t W>
void sum_columns(const float* dy, std::size_t rows, std::size_t out, std::size_t j0, float* db) {
    double sums[W] = {};
    for (std::size_t r = 0; r < rows; ++r) {
        const float* row = dy + r * out + j0;
        for (std::size_t o = 0; o < W; ++o) sums[o] += row[o];
    }
    for (std::size_t o = 0; o < W; ++o) db[j0 + o] = float(sums[o]);
}

}  // namespace

Tensor linear_bias_grad(const float* dy, std::size_t rows, std::size_t out, std::size_t threads) {
    Tensor db({out});
    const std::size_t blocks = (out + bias_columns - 1) / bias_columns;
    parallel_for(blocks, threads_for(std::uint64_t(rows) * out * bias_work, threads),
                 [&](std::size_t begin, std::size_t end) {
                     const std::size_t j1 = std::min(out, end * bias_columns);
                     std::size_t j = begin * bias_columns;
                     for (; j + bias_columns <= j1; j += bias_columns)
                         sum_columns<bias_columns>(dy, rows, out, j, db.data());
                     for (; j < j1; ++j) sum_columns<1>(dy, rows, out, j, db.data());
                 });
    return db;
}

Tensor linear_input_grad(const float* dy, const Tensor& w, std::size_t rows, std::size_t threads,
                         Workspace* workspace) {
    const std::size_t out = w.size(0), in = w.size(1);
    if (out == 0) return Tensor({rows, in});
    Tensor dx = new_uninitialised(workspace, {rows, in});
    parallel_gemm({dy, rows, out, out, 1}, {w.data(), out, in, in, 1}, dx.data(), in, threads);
    return dx;
}

LinearGrads linear_backward(const Tensor& x, const Tensor& w, bool bias, const Tensor& dy,
                            std::size_t threads, Workspace* workspace) {
    const std::size_t out = w.size(0), in = w.size(1), rows = dy.numel() / out;
    const Tensor weight = w.contiguous();
    LinearGrads g;
    g.dw = linear_weight_grad(dy.data(), x.data(), rows, out, in, threads);
    if (bias) g.db = linear_bias_grad(dy.data(), rows, out, threads);
    Shape shape = dy.shape();
    shape.back() = in;
    g.dx = linear_input_grad(dy.data(), weight, rows, threads, workspace).view(shape);
    return g;
}

}  // namespace mha
