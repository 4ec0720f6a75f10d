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

}  // namespace

template <typename T>
void layer_norm_rows(const T* x, const T* gamma, const T* beta, std::size_t rows, std::size_t E,
                     T* y) {
    for (std::size_t r = 0; r < rows; ++r) {
        const T* in = x + r * E;
        T* out = y + r * E;
        const RowMoments m = row_moments(in, E);
        for (std::size_t i = 0; i < E; ++i) {
            out[i] = T((in[i] - m.mean) * m.inverse_std * gamma[i] + beta[i]);
        }
    }
}

template <typename T>
void layer_norm_backward_rows(const T* x, const T* gamma, const T* dy, std::size_t rows,
                              std::size_t E, std::size_t threads, T* dx, T* dgamma, T* dbeta) {
    std::vector<RowMoments> moments(rows);
    threads = threads_for(std::uint64_t(rows) * E * 4, threads);
    parallel_for(rows, threads, [&](std::size_t begin, std::size_t end) {
        for (std::size_t r = begin; r < end; ++r) {
            const T* in = x + r * E;
            const T* d = dy + r * E;
            const RowMoments m = moments[r] = row_moments(in, E);
            double mean_g = 0.0, mean_g_xhat = 0.0;  // mean(g), mean(g ∘ x̂), g = dy ∘ γ
            for (std::size_t i = 0; i < E; ++i) {
                const double g = double(d[i]) * gamma[i];
                mean_g += g;
                mean_g_xhat += g * (in[i] - m.mean) * m.inverse_std;
            }
            mean_g /= double(E);
            mean_g_xhat /= double(E);
            for (std::size_t i = 0; i < E; ++i) {
                const double xhat = (in[i] - m.mean) * m.inverse_std;
                const double g = double(d[i]) * gamma[i];
                dx[r * E + i] = T(m.inverse_std * (g - mean_g - xhat * mean_g_xhat));
            }
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

Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, std::size_t threads) {
    const std::size_t E = x.size(x.dim() - 1), rows = x.numel() / E;
    Tensor y(x.shape());
    parallel_for(rows, threads_for(std::uint64_t(rows) * E * 4, threads),
                 [&](std::size_t begin, std::size_t end) {
                     layer_norm_rows(x.data() + begin * E, gamma.data(), beta.data(),
                                     end - begin, E, y.data() + begin * E);
                 });
    return y;
}

LayerNormGrads layer_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& dy,
                                   std::size_t threads) {
    const Tensor in = x.contiguous(), d = dy.contiguous();
    const std::size_t E = in.size(in.dim() - 1);
    LayerNormGrads grads{Tensor(in.shape()), Tensor({E}), Tensor({E})};
    layer_norm_backward_rows(in.data(), gamma.contiguous().data(), d.data(), in.numel() / E, E,
                             threads, grads.x.data(), grads.gamma.data(), grads.beta.data());
    return grads;
}

}  // namespace mha
