// LayerNorm forward and backward over rows; the float32 loops built for each CPU as the
// kernels are (the same double operations in every build, so the same bits).

#include "core/layers/layer_norm.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "core/kernels/block_transpose.h"
#include "core/kernels/variant_builds.h"
#include "core/threads/parallel.h"

// Templates marked this way are compiled inside each build's target function.
#define MHA_LN_INLINE inline __attribute__((always_inline))

namespace mha {

namespace {

struct RowMoments {
    double mean;
    double inverse_std;  // 1 / √(biased variance + eps)
};

template <typename T>
MHA_LN_INLINE RowMoments row_moments(const T* in, std::size_t E) {
    double mean = 0.0;
    for (std::size_t i = 0; i < E; ++i) mean += in[i];
    mean /= double(E);
    double variance = 0.0;
    for (std::size_t i = 0; i < E; ++i) variance += (in[i] - mean) * (in[i] - mean);
    variance /= double(E);
    return {mean, 1.0 / std::sqrt(variance + double(layer_norm_eps))};
}

// Rows whose sums run side by side: each row's chain of additions keeps row_moments' order,
// and the chains of the group overlap instead of each waiting on its last addition.
constexpr std::size_t row_group = 8;

// Operations an element of a row takes, about (its sums and the output, in double): what
// threads_for weighs a split by.
constexpr std::uint64_t row_work = 12;

// row_moments of row_group rows of x (row_group, E), the same bits.
template <typename T>
MHA_LN_INLINE void group_moments(const T* x, std::size_t E, RowMoments (&m)[row_group]) {
    double mean[row_group] = {}, variance[row_group] = {};
    for (std::size_t i = 0; i < E; ++i) {
        for (std::size_t r = 0; r < row_group; ++r) mean[r] += x[r * E + i];
    }
    for (double& value : mean) value /= double(E);
    for (std::size_t i = 0; i < E; ++i) {
        for (std::size_t r = 0; r < row_group; ++r) {
            variance[r] += (x[r * E + i] - mean[r]) * (x[r * E + i] - mean[r]);
        }
    }
    for (std::size_t r = 0; r < row_group; ++r) {
        m[r] = {mean[r], 1.0 / std::sqrt(variance[r] / double(E) + double(layer_norm_eps))};
    }
}

// The sums of the backward of row_group rows: mean_g[k] = Σ g, mean_g_xhat[k] = Σ g x̂ (not yet
// divided by E), g = dy ∘ γ, in index order.
template <typename T>
MHA_LN_INLINE void group_gradient_sums(const T* x, const T* dy, const T* gamma, std::size_t E,
                                       const RowMoments (&m)[row_group],
                                       double (&mean_g)[row_group],
                                       double (&mean_g_xhat)[row_group]) {
    for (std::size_t i = 0; i < E; ++i) {
        for (std::size_t k = 0; k < row_group; ++k) {
            const double g = double(dy[k * E + i]) * gamma[i];
            mean_g[k] += g;
            mean_g_xhat[k] += g * (x[k * E + i] - m[k].mean) * m[k].inverse_std;
        }
    }
}

// In float32 the group's rows run in the lanes of one vector of doubles: each lane keeps its
// row's chain of additions in index order, so the same bits as above. 8 x 8 blocks of the rows
// are turned into columns in registers (block_columns), the last E % 8 columns read
// one element at a time.
static_assert(row_group == 8, "the float32 group sums take 8 rows in 8 lanes");
typedef double Doubles8 __attribute__((vector_size(8 * sizeof(double))));

// (Vectors go out through references: a 64-byte vector returned by value from a function
// built without AVX-512 has another calling convention, and g++ warns.)
MHA_LN_INLINE void widen(const Floats8& v, Doubles8& out) {
    out = __builtin_convertvector(v, Doubles8);
}

// out = x[r * stride] for r < 8, in double.
MHA_LN_INLINE void column(const float* x, std::size_t stride, Doubles8& out) {
    out = Doubles8{x[0],          x[stride],     x[2 * stride], x[3 * stride],
                   x[4 * stride], x[5 * stride], x[6 * stride], x[7 * stride]};
}

// Calls step(i, c) for every column i, in index order, of the 8 rows (E long) of each of the
// S matrices xs: c[s] is xs[s]'s column i in double.
template <std::size_t S, typename Step>
MHA_LN_INLINE void for_columns(const float* const (&xs)[S], std::size_t E, Step step) {
    Doubles8 c[S] = {};  // every lane written before step reads it (g++ -O1 cannot tell)
    std::size_t i = 0;
    for (; i + 8 <= E; i += 8) {
        Floats8 blocks[S][8];
        for (std::size_t s = 0; s < S; ++s) block_columns(xs[s] + i, E, blocks[s]);
        for (std::size_t j = 0; j < 8; ++j) {
            for (std::size_t s = 0; s < S; ++s) widen(blocks[s][j], c[s]);
            step(i + j, c);
        }
    }
    for (; i < E; ++i) {
        for (std::size_t s = 0; s < S; ++s) column(xs[s] + i, E, c[s]);
        step(i, c);
    }
}

MHA_LN_INLINE void group_moments(const float* x, std::size_t E, RowMoments (&m)[row_group]) {
    const float* const rows[1] = {x};
    Doubles8 mean = {}, variance = {};
    for_columns(rows, E, [&](std::size_t, const Doubles8(&c)[1]) { mean += c[0]; });
    mean /= double(E);
    for_columns(rows, E, [&](std::size_t, const Doubles8(&c)[1]) {
        variance += (c[0] - mean) * (c[0] - mean);
    });
    for (std::size_t r = 0; r < row_group; ++r) {
        m[r] = {mean[r], 1.0 / std::sqrt(variance[r] / double(E) + double(layer_norm_eps))};
    }
}

MHA_LN_INLINE void group_gradient_sums(const float* x, const float* dy, const float* gamma,
                                       std::size_t E, const RowMoments (&m)[row_group],
                                       double (&mean_g)[row_group],
                                       double (&mean_g_xhat)[row_group]) {
    Doubles8 mean, inverse_std, sum_g = {}, sum_g_xhat = {};
    for (std::size_t k = 0; k < row_group; ++k) {
        mean[k] = m[k].mean;
        inverse_std[k] = m[k].inverse_std;
    }
    const float* const rows[2] = {dy, x};
    for_columns(rows, E, [&](std::size_t i, const Doubles8(&c)[2]) {  // c: dy's column, x's
        const Doubles8 g = c[0] * double(gamma[i]);
        sum_g += g;
        sum_g_xhat += g * (c[1] - mean) * inverse_std;
    });
    for (std::size_t k = 0; k < row_group; ++k) {
        mean_g[k] = sum_g[k];
        mean_g_xhat[k] = sum_g_xhat[k];
    }
}

// One row of the forward given its moments.
template <typename T>
MHA_LN_INLINE void normalise_row(const T* in, const RowMoments& m, const T* gamma, const T* beta,
                                 std::size_t E, T* out) {
    for (std::size_t i = 0; i < E; ++i) {
        out[i] = T((in[i] - m.mean) * m.inverse_std * gamma[i] + beta[i]);
    }
}

// One row of the backward given its moments and its sums mean(g), mean(g ∘ x̂), g = dy ∘ γ.
template <typename T>
MHA_LN_INLINE void row_input_grad(const T* in, const T* d, const T* gamma, const RowMoments& m,
                                  double mean_g, double mean_g_xhat, std::size_t E, T* dx) {
    for (std::size_t i = 0; i < E; ++i) {
        const double xhat = (in[i] - m.mean) * m.inverse_std;
        const double g = double(d[i]) * gamma[i];
        dx[i] = T(m.inverse_std * (g - mean_g - xhat * mean_g_xhat));
    }
}

// layer_norm_rows, its rows in groups of row_group.
template <typename T>
MHA_LN_INLINE void rows_t(const T* x, const T* gamma, const T* beta, std::size_t rows,
                          std::size_t E, T* y) {
    std::size_t r = 0;
    for (; r + row_group <= rows; r += row_group) {
        RowMoments m[row_group];
        group_moments(x + r * E, E, m);
        for (std::size_t k = 0; k < row_group; ++k) {
            normalise_row(x + (r + k) * E, m[k], gamma, beta, E, y + (r + k) * E);
        }
    }
    for (; r < rows; ++r)
        normalise_row(x + r * E, row_moments(x + r * E, E), gamma, beta, E, y + r * E);
}

// The backward's rows [begin, end): dx and each row's moments, a group of row_group rows at a
// time, then one by one, each row's sums in index order.
template <typename T>
MHA_LN_INLINE void input_grad_t(const T* x, const T* gamma, const T* dy, std::size_t E,
                                std::size_t begin, std::size_t end, RowMoments* moments, T* dx) {
    std::size_t r = begin;
    for (; r + row_group <= end; r += row_group) {
        RowMoments m[row_group];
        group_moments(x + r * E, E, m);
        double mean_g[row_group] = {}, mean_g_xhat[row_group] = {};
        group_gradient_sums(x + r * E, dy + r * E, gamma, E, m, mean_g, mean_g_xhat);
        for (std::size_t k = 0; k < row_group; ++k) {
            moments[r + k] = m[k];
            row_input_grad(x + (r + k) * E, dy + (r + k) * E, gamma, m[k], mean_g[k] / double(E),
                           mean_g_xhat[k] / double(E), E, dx + (r + k) * E);
        }
    }
    for (; r < end; ++r) {
        const T* in = x + r * E;
        const T* d = dy + r * E;
        const RowMoments m = moments[r] = row_moments(in, E);
        double mean_g = 0.0, mean_g_xhat = 0.0;
        for (std::size_t i = 0; i < E; ++i) {
            const double g = double(d[i]) * gamma[i];
            mean_g += g;
            mean_g_xhat += g * (in[i] - m.mean) * m.inverse_std;
        }
        row_input_grad(in, d, gamma, m, mean_g / double(E), mean_g_xhat / double(E), E, dx + r * E);
    }
}

// The backward's dγ and dβ for columns [begin, end), each summed down the rows in order, the
// rows read along.
template <typename T>
MHA_LN_INLINE void column_sums_t(const T* x, const T* dy, const RowMoments* moments,
                                 std::size_t rows, std::size_t E, std::size_t begin,
                                 std::size_t end, T* dgamma, T* dbeta) {
    std::vector<double> sum_gamma(end - begin), sum_beta(end - begin);
    for (std::size_t r = 0; r < rows; ++r) {
        const T* in = x + r * E + begin;
        const T* d = dy + r * E + begin;
        const RowMoments m = moments[r];
        for (std::size_t i = 0; i < end - begin; ++i) {
            const double xhat = (in[i] - m.mean) * m.inverse_std;
            sum_gamma[i] += d[i] * xhat;
            sum_beta[i] += d[i];
        }
    }
    for (std::size_t i = 0; i < end - begin; ++i) {
        dgamma[begin + i] = T(sum_gamma[i]);
        dbeta[begin + i] = T(sum_beta[i]);
    }
}

template <typename T>
struct Loops {
    void (*rows)(const T*, const T*, const T*, std::size_t, std::size_t, T*);
    void (*input_grad)(const T*, const T*, const T*, std::size_t, std::size_t, std::size_t,
                       RowMoments*, T*);
    void (*column_sums)(const T*, const T*, const RowMoments*, std::size_t, std::size_t,
                        std::size_t, std::size_t, T*, T*);
};

#define MHA_LN_BUILD(suffix, attribute, T)                                                      \
    attribute void rows_##suffix(const T* x, const T* gamma, const T* beta, std::size_t rows,   \
                                 std::size_t E, T* y) {                                         \
        rows_t(x, gamma, beta, rows, E, y);                                                     \
    }                                                                                           \
    attribute void input_grad_##suffix(const T* x, const T* gamma, const T* dy, std::size_t E,  \
                                       std::size_t begin, std::size_t end, RowMoments* moments, \
                                       T* dx) {                                                 \
        input_grad_t(x, gamma, dy, E, begin, end, moments, dx);                                 \
    }                                                                                           \
    attribute void column_sums_##suffix(const T* x, const T* dy, const RowMoments* moments,     \
                                        std::size_t rows, std::size_t E, std::size_t begin,     \
                                        std::size_t end, T* dgamma, T* dbeta) {                 \
        column_sums_t(x, dy, moments, rows, E, begin, end, dgamma, dbeta);                      \
    }

// g++ vectorises these loops for 256-bit registers in a target function unless told to use
// all 512 bits (clang++ takes no such option there, and ignores a target string naming it)
#if (defined(__x86_64__) || defined(__i386__)) && !defined(__clang__)
#define MHA_LN_AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,prefer-vector-width=512")))
#else
#define MHA_LN_AVX512 MHA_AVX512_TARGET
#endif
MHA_LN_BUILD(baseline, , float)
MHA_LN_BUILD(double, , double)
MHA_LN_BUILD(avx2, MHA_AVX2_TARGET, float)
MHA_LN_BUILD(avx512, MHA_LN_AVX512, float)

// The float32 loops built for the kernels in use, the double ones (finite differences) once.
// Built for SSE2 alone these loops took 8% of a one-thread training step; the wider builds
// vectorise the rows' normalisation and gradients and take the sums' scalar steps in VEX form.
Loops<float> loops(const float*) {
    return for_kernels_in_use<Loops<float>>(
        {rows_baseline, input_grad_baseline, column_sums_baseline},
        {rows_avx2, input_grad_avx2, column_sums_avx2},
        {rows_avx512, input_grad_avx512, column_sums_avx512});
}

Loops<double> loops(const double*) { return {rows_double, input_grad_double, column_sums_double}; }

}  // namespace

template <typename T>
void layer_norm_rows(const T* x, const T* gamma, const T* beta, std::size_t rows, std::size_t E,
                     T* y) {
    loops(x).rows(x, gamma, beta, rows, E, y);
}

template <typename T>
void layer_norm_backward_rows(const T* x, const T* gamma, const T* dy, std::size_t rows,
                              std::size_t E, std::size_t threads, T* dx, T* dgamma, T* dbeta) {
    const Loops<T> run = loops(x);
    std::vector<RowMoments> moments(rows);
    threads = threads_for(std::uint64_t(rows) * E * row_work, threads);
    parallel_for(rows, threads, [&](std::size_t begin, std::size_t end) {
        run.input_grad(x, gamma, dy, E, begin, end, moments.data(), dx);
    });
    parallel_for(E, threads, [&](std::size_t begin, std::size_t end) {
        run.column_sums(x, dy, moments.data(), rows, E, begin, end, dgamma, dbeta);
    });
}

template void layer_norm_rows(const float*, const float*, const float*, std::size_t, std::size_t,
                              float*);
template void layer_norm_rows(const double*, const double*, const double*, std::size_t, std::size_t,
                              double*);
template void layer_norm_backward_rows(const float*, const float*, const float*, std::size_t,
                                       std::size_t, std::size_t, float*, float*, float*);
template void layer_norm_backward_rows(const double*, const double*, const double*, std::size_t,
                                       std::size_t, std::size_t, double*, double*, double*);

Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, std::size_t threads,
                  Workspace* workspace) {
    if (any_dry(x, gamma, beta)) return new_dry(workspace, x.shape());
    const std::size_t E = x.size(x.dim() - 1), rows = x.numel() / E;
    Tensor y = new_uninitialised(workspace, x.shape());
    parallel_for(rows, threads_for(std::uint64_t(rows) * E * row_work, threads),
                 [&](std::size_t begin, std::size_t end) {
                     layer_norm_rows(x.data() + begin * E, gamma.data(), beta.data(), end - begin,
                                     E, y.data() + begin * E);
                 });
    return y;
}

LayerNormGrads layer_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& dy,
                                   std::size_t threads, Workspace* workspace) {
    const Tensor in = x.contiguous(), d = dy.contiguous();
    const std::size_t E = in.size(in.dim() - 1);
    if (any_dry(in, gamma, d))
        return {new_dry(workspace, in.shape()), new_dry(workspace, {E}), new_dry(workspace, {E})};
    LayerNormGrads grads{new_uninitialised(workspace, in.shape()), Tensor({E}), Tensor({E})};
    layer_norm_backward_rows(in.data(), gamma.contiguous().data(), d.data(), in.numel() / E, E,
                             threads, grads.x.data(), grads.gamma.data(), grads.beta.data());
    return grads;
}

}  // namespace mha
