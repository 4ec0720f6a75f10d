// dW = dYᵀ X, db = Σ dY, dX = dY W on the kernels' gemm, split over output rows or columns.

#include "core/backward/linear_backward.h"

#include "core/pass/describe.h"

#include <algorithm>
#include <vector>

#include "core/threads/parallel.h"

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
void untranspose(const Tensor& dw_t, std::size_t out, std::size_t in, Tensor& dw) {
    if (dw_t.empty() || dw_t.dry()) return;
    for (std::size_t o = 0; o < out; ++o) {
        for (std::size_t i = 0; i < in; ++i) dw.data()[o * in + i] = dw_t.data()[i * out + o];
    }
}

// The rows of dy (..., out): its leading dimensions' product.
std::size_t leading_rows(const Tensor& dy) {
    std::size_t rows = 1;
    for (std::size_t d = 0; d + 1 < dy.dim(); ++d) rows *= dy.size(d);
    return rows;
}

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

std::vector<LinearGrads> linear_backward(const std::vector<LinearLayer>& layers,
                                         std::size_t threads, Workspace* workspace) {
    std::vector<LinearGrads> grads(layers.size());
    std::vector<Tensor> weights;                    // contiguous
    std::vector<Tensor> transposed(layers.size());  // dWᵀ, when out > in
    std::vector<Product> products;                  // each layer's dW, then its dX
    weights.reserve(layers.size());
    std::uint64_t macs = 0;
    for (std::size_t l = 0; l < layers.size(); ++l) {
        const LinearLayer& layer = layers[l];
        const std::size_t out = layer.w.size(0), in = layer.w.size(1),
                          rows = leading_rows(layer.dy);
        LinearGrads& g = grads[l];
        if (any_dry(layer.x, layer.w, layer.dy)) {  // a dry run: the shapes alone
            g = {new_dry(workspace, {out, in}), layer.bias ? new_dry(workspace, {out}) : Tensor(),
                 new_dry(workspace, {rows, in})};
            if (out > in) transposed[l] = new_dry(workspace, {in, out});
            continue;
        }
        weights.push_back(layer.w.contiguous());
        g.dw = new_uninitialised(workspace, {out, in});  // the product writes all of it
        if (out > in) transposed[l] = new_uninitialised(workspace, {in, out});
        g.dx = new_uninitialised(workspace, {rows, in});
        products.push_back(weight_grad_product(layer.dy.data(), layer.x.data(), rows, out, in,
                                               g.dw.data(),
                                               out > in ? transposed[l].data() : nullptr));
        products.push_back({{layer.dy.data(), rows, out, out, 1},
                            {weights.back().data(), out, in, in, 1},
                            g.dx.data(),
                            in});
        macs += 2 * std::uint64_t(rows) * out * in;
    }
    // Every product is a unit the next free thread takes (whole, or in parts when the threads
    // outnumber the products): dW and dX cost the same (rows · out · in multiply-adds each), so
    // one layer's two products keep two threads busy, and three layers' six keep them busy
    // with one dispatch. At (128, 512) x (512, 512) one product split over two threads ran at
    // 1.5x one thread.
    threads = threads_for(macs, threads);
    const std::size_t parts =
        (threads + products.size() - 1) / std::max<std::size_t>(1, products.size());
    parallel_each(products.size() * parts, threads, [&](std::size_t unit, std::size_t) {
        product_part(products[unit / parts], unit % parts, parts);
    });
    for (std::size_t l = 0; l < layers.size(); ++l) {
        const LinearLayer& layer = layers[l];
        const std::size_t out = layer.w.size(0), in = layer.w.size(1);
        untranspose(transposed[l], out, in, grads[l].dw);
        if (layer.bias && !grads[l].dw.dry())
            grads[l].db = linear_bias_grad(layer.dy.data(), leading_rows(layer.dy), out, threads);
        Shape shape = layer.dy.shape();
        shape.back() = in;
        grads[l].dx = grads[l].dx.view(shape);
    }
    return grads;
}

LinearGrads linear_backward(const Tensor& x, const Tensor& w, bool bias, const Tensor& dy,
                            std::size_t threads, Workspace* workspace) {
    return linear_backward({{x, w, bias, dy}}, threads, workspace).front();
}

void show_linear_grads(const LinearGrads& g, const ProjectionNames& n, PassTrace& trace) {
    const Shape& dx = g.dx.shape();
    const std::uint64_t macs =
        macs_of({element_count(Shape(dx.begin(), dx.end() - 1)), g.dw.size(0), g.dw.size(1)});
    trace.show(g.dw, [&] {
        return described(
            n.operand, StepKind::WeightGrad, n.number, "grad", "d" + n.w,
            "d" + n.w + " = " + n.dy + ".T @ " + n.x + "  (summed over B and the positions)",
            n.w_dims, macs);
    });
    if (!g.db.empty()) {
        trace.show(g.db, [&] {
            return described(n.operand, StepKind::BiasGrad, n.number, "grad", "d" + n.b,
                             "d" + n.b + " = " + n.dy + ".sum((0, 1))", {n.w_dims.front()});
        });
    }
    trace.show(g.dx, [&] {
        return described(n.operand, StepKind::InputGrad, n.number, "grad", n.dx,
                         n.dx + " = " + n.dy + " @ " + n.w, n.dx_dims, macs);
    });
}

}  // namespace mha
