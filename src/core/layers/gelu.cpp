// GELU forward and backward, element by element.

#include "core/layers/gelu.h"

#include <cmath>

#include "core/kernels/parallel.h"

namespace mha {

template <typename T>
void gelu_values(const T* u, std::size_t n, T* y) {
    const double inverse_sqrt2 = 1.0 / std::sqrt(2.0);
    for (std::size_t i = 0; i < n; ++i) {
        const double v = u[i];
        y[i] = T(0.5 * v * (1.0 + std::erf(v * inverse_sqrt2)));
    }
}

template <typename T>
void gelu_backward_values(const T* u, const T* dy, std::size_t n, T* du) {
    const double inverse_sqrt2 = 1.0 / std::sqrt(2.0);
    const double inverse_sqrt_2pi = 1.0 / std::sqrt(2.0 * M_PI);
    for (std::size_t i = 0; i < n; ++i) {
        const double v = u[i];
        const double cdf = 0.5 * (1.0 + std::erf(v * inverse_sqrt2));
        const double pdf = std::exp(-0.5 * v * v) * inverse_sqrt_2pi;
        du[i] = T(dy[i] * (cdf + v * pdf));
    }
}

template void gelu_values(const float*, std::size_t, float*);
template void gelu_values(const double*, std::size_t, double*);
template void gelu_backward_values(const float*, const float*, std::size_t, float*);
template void gelu_backward_values(const double*, const double*, std::size_t, double*);

Tensor gelu(const Tensor& u) {
    Tensor y(u.shape());
    gelu_values(u.data(), u.numel(), y.data());
    return y;
}

Tensor gelu_backward(const Tensor& u, const Tensor& dy, std::size_t threads) {
    const Tensor in = u.contiguous(), d = dy.contiguous();
    Tensor du(in.shape());
    const std::size_t n = in.numel();
    parallel_for(n, threads_for(std::uint64_t(n) * 32, threads),
                 [&](std::size_t begin, std::size_t end) {
                     gelu_backward_values(in.data() + begin, d.data() + begin, end - begin,
                                          du.data() + begin);
                 });
    return du;
}

}  // namespace mha
