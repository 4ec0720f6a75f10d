// dW = dYᵀ X, db = Σ dY, dX = dY W on the kernels' gemm, split over output rows or columns.

#include "core/backward/linear_backward.h"

#include <algorithm>
#include <vector>

#include "core/kernels/parallel.h"

namespace mha {

namespace {

// One product c (n, m) = a (n, k) b (k, m), c row-major with rows ldc apart.
struct Product {
    MatrixView a, b;
    float* c;
    std::size_t ldc;
};

// Part `part` of `parts` of a product: c's rows when m <= n (each part packs its rows of a
// and all of b), else its columns in blocks of 32, a multiple of every kernel variant's tile
// width so no block adds a partial tile (each part packs all of a and its columns of b).
void product_part(const Product& p, std::size_t part, std::size_t parts) {
    const std::size_t n = p.a.rows, m = p.b.cols;
    if (m <= n) {
        const std::size_t begin = n * part / parts, end = n * (part + 1) / parts;
        const MatrixView rows{p.a.data + begin * p.a.row_stride, end - begin, p.a.cols,
                              p.a.row_stride, p.a.col_stride};
        gemm(rows, p.b, p.c + begin * p.ldc, p.ldc);
        return;
    }
    constexpr std::size_t block = 32;
    const std::size_t blocks = (m + block - 1) / block;
    const std::size_t j0 = std::min(m, blocks * part / parts * block);
    const std::size_t j1 = std::min(m, blocks * (part + 1) / parts * block);
    const MatrixView columns{p.b.data + j0 * p.b.col_stride, p.b.rows, j1 - j0, p.b.row_stride,
                             p.b.col_stride};
    gemm(p.a, columns, p.c + j0, p.ldc);
}

// dW (out, in) = dYᵀ X into dw, or, when out > in, dWᵀ (in, out) = Xᵀ dY into dw_t (the left
// operand then read down columns `in` apart rather than `out` apart; each element sums the
// same products in the same order, so the same bits).
Product weight_grad_product(const float* dy, const float* x, std::size_t rows, std::size_t out,
                            std::size_t in, float* dw, float* dw_t) {
    if (out <= in) return {{dy, out, rows, 1, out}, {x, rows, in, in, 1}, dw, in};
    return {{x, in, rows, 1, in}, {dy, rows, out, out, 1}, dw_t, out};
}

// dW from dWᵀ when weight_grad_product took that way.
void untranspose(const std::vector<float>& dw_t, std::size_t out, std::size_t in, Tensor& dw) {
    for (std::size_t o = 0; o < out && !dw_t.empty(); ++o) {
        for (std::size_t i = 0; i < in; ++i) dw.data()[o * in + i] = dw_t[i * out + o];
    }
}

}  // namespace

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

LinearGrads linear_backward(const Tensor& x, const Tensor& w, bool bias, const Tensor& dy,
                            std::size_t threads, Workspace* workspace) {
    const std::size_t out = w.size(0), in = w.size(1), rows = out == 0 ? 0 : dy.numel() / out;
    const Tensor weight = w.contiguous();
    LinearGrads g;
    g.dw = Tensor({out, in});
    std::vector<float> dw_t(out > in ? in * out : 0);
    Tensor dx = new_uninitialised(workspace, {rows, in});
    // dW and dX cost the same (rows · out · in multiply-adds each), so they run at once, half
    // the threads on each: each thread then takes a whole product or a larger share of one
    // (at (128, 512) x (512, 512), each product split over two threads ran at 1.5x one)
    const Product parts[2] = {
        weight_grad_product(dy.data(), x.data(), rows, out, in, g.dw.data(), dw_t.data()),
        {{dy.data(), rows, out, out, 1}, {weight.data(), out, in, in, 1}, dx.data(), in}};
    threads = threads_for(2 * std::uint64_t(rows) * out * in, threads);
    const std::size_t each = (threads + 1) / 2;  // parts of each product
    parallel_for(2 * each, threads, [&](std::size_t begin, std::size_t end) {
        for (std::size_t u = begin; u < end; ++u) product_part(parts[u / each], u % each, each);
    });
    untranspose(dw_t, out, in, g.dw);
    if (bias) g.db = linear_bias_grad(dy.data(), rows, out, threads);
    Shape shape = dy.shape();
    shape.back() = in;
    g.dx = dx.view(shape);
    return g;
}

}  // namespace mha
