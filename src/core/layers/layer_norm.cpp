// LayerNorm forward and backward over rows.

#include "core/layers/layer_norm.h"

#include <cmath>
#include <vector>

#include "core/kernels/parallel.h"

namespace mha {

namespace {

struct RowMoments {
    double mean;
    double inverse_std;  // 1 / √(biased variance + eps)
};

template <typename T>
RowMoments row_moments(const T* in, std::size_t E) {
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
void group_moments(const T* x, std::size_t E, RowMoments (&m)[row_group]) {
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

// One row of the forward given its moments.
template <typename T>
void normalise_row(const T* in, const RowMoments& m, const T* gamma, const T* beta,
                   std::size_t E, T* out) {
    for (std::size_t i = 0; i < E; ++i) {
        out[i] = T((in[i] - m.mean) * m.inverse_std * gamma[i] + beta[i]);
    }
}

// One row of the backward given its moments and its sums mean(g), mean(g ∘ x̂), g = dy ∘ γ.
template <typename T>
void row_input_grad(const T* in, const T* d, const T* gamma, const RowMoments& m, double mean_g,
                    double mean_g_xhat, std::size_t E, T* dx) {
    for (std::size_t i = 0; i < E; ++i) {
        const double xhat = (in[i] - m.mean) * m.inverse_std;
        const double g = double(d[i]) * gamma[i];
        dx[i] = T(m.inverse_std * (g - mean_g - xhat * mean_g_xhat));
    }
}

}  // namespace

template <typename T>
void layer_norm_rows(const T* x, const T* gamma, const T* beta, std::size_t rows, std::size_t E,
                     T* y) {
    std::size_t r = 0;
    for (; r + row_group <= rows; r += row_group) {
        RowMoments m[row_group];
        group_moments(x + r * E, E, m);
        for (std::size_t k = 0; k < row_group; ++k) {
            normalise_row(x + (r + k) * E, m[k], gamma, beta, E, y + (r + k) * E);
        }
    }
    for (; r < rows; ++r) normalise_row(x + r * E, row_moments(x + r * E, E), gamma, beta, E,
                                        y + r * E);
}

template <typename T>
void layer_norm_backward_rows(const T* x, const T* gamma, const T* dy, std::size_t rows,
                              std::size_t E, std::size_t threads, T* dx, T* dgamma, T* dbeta) {
    std::vector<RowMoments> moments(rows);
    threads = threads_for(std::uint64_t(rows) * E * row_work, threads);
    // rows [begin, end): a group of row_group rows at a time, then one by one, each row's sums
    // in index order
    parallel_for(rows, threads, [&](std::size_t begin, std::size_t end) {
        std::size_t r = begin;
        for (; r + row_group <= end; r += row_group) {
            RowMoments m[row_group];
            group_moments(x + r * E, E, m);
            double mean_g[row_group] = {}, mean_g_xhat[row_group] = {};
            for (std::size_t i = 0; i < E; ++i) {
                for (std::size_t k = 0; k < row_group; ++k) {
                    const std::size_t at = (r + k) * E + i;
                    const double g = double(dy[at]) * gamma[i];
                    mean_g[k] += g;
                    mean_g_xhat[k] += g * (x[at] - m[k].mean) * m[k].inverse_std;
                }
            }
            for (std::size_t k = 0; k < row_group; ++k) {
                moments[r + k] = m[k];
                row_input_grad(x + (r + k) * E, dy + (r + k) * E, gamma, m[k],
                               mean_g[k] / double(E), mean_g_xhat[k] / double(E), E,
                               dx + (r + k) * E);
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
            row_input_grad(in, d, gamma, m, mean_g / double(E), mean_g_xhat / double(E), E,
                           dx + r * E);
        }
    });
    parallel_for(E, threads, [&](std::size_t begin, std::size_t end) {
        // columns [begin, end), each summed down the rows in order, the rows read along
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
    const std::size_t E = x.size(x.dim() - 1), rows = x.numel() / E;
    Tensor y = new_uninitialised(workspace, x.shape());
    parallel_for(rows, threads_for(std::uint64_t(rows) * E * row_work, threads),
                 [&](std::size_t begin, std::size_t end) {
                     layer_norm_rows(x.data() + begin * E, gamma.data(), beta.data(),
                                     end - begin, E, y.data() + begin * E);
                 });
    return y;
}

LayerNormGrads layer_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& dy,
                                   std::size_t threads, Workspace* workspace) {
    const Tensor in = x.contiguous(), d = dy.contiguous();
    const std::size_t E = in.size(in.dim() - 1);
    LayerNormGrads grads{new_uninitialised(workspace, in.shape()), Tensor({E}), Tensor({E})};
    layer_norm_backward_rows(in.data(), gamma.contiguous().data(), d.data(), in.numel() / E, E,
                             threads, grads.x.data(), grads.gamma.data(), grads.beta.data());
    return grads;
}

}  // namespace mha
