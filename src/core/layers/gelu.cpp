// GELU forward and backward, element by element: float32 on vector lanes, double for checking.

#include "core/layers/gelu.h"

#include <algorithm>
#include <cmath>

#include "core/kernels/variant_builds.h"
#include "core/kernels/vector_exp.h"
#include "core/threads/parallel.h"

#define MHA_GELU_INLINE inline __attribute__((always_inline))

namespace mha {

namespace {

// erf(a) for a >= 0 in float32, within 2e-7, given e^(−a²) (e_minus_a2). Below 1:
// a · P(a²); from 1 on: 1 − e^(−a²) R(a), R ≈ erfc(a) e^(a²) on [1, 4] (from 3.92 on erf
// rounds to 1). P and R are least-squares fits at Chebyshev nodes (tests/data/fit_gelu_erf.py).
MHA_GELU_INLINE float erf_nonnegative(float a, float e_minus_a2) {
    const float t = a * a;
    float p = -5.696713342e-04f;
    p = p * t + 4.934519064e-03f;
    p = p * t + -2.672698908e-02f;
    p = p * t + 1.128078923e-01f;
    p = p * t + -3.761241436e-01f;
    p = p * t + 1.128379107e+00f;
    const float s = std::min(a, 4.0f) - 2.5f;
    float r = -4.269337239e-07f;
    r = r * s + 1.671801783e-06f;
    r = r * s + -3.744433343e-06f;
    r = r * s + 1.435366266e-05f;
    r = r * s + -5.952952779e-05f;
    r = r * s + 2.129720815e-04f;
    r = r * s + -7.331467350e-04f;
    r = r * s + 2.465982456e-03f;
    r = r * s + -8.001696318e-03f;
    r = r * s + 2.493820339e-02f;
    r = r * s + -7.434733957e-02f;
    r = r * s + 2.108063549e-01f;
    return a < 1.0f ? a * p : 1.0f - e_minus_a2 * r;
}

// Φ(u) = (1 + erf(u/√2)) / 2 and e^(−u²/2), which φ(u) = e^(−u²/2)/√(2π) reads.
struct Normal {
    float cdf, exp_half_square;
};
MHA_GELU_INLINE Normal normal_at(float u) {
    const float a = std::fabs(u) * 0.707106781f;
    const float e = exp_nonpositive_t(-(a * a));
    const float half_erf = 0.5f * erf_nonnegative(a, e);
    return {u < 0.0f ? 0.5f - half_erf : 0.5f + half_erf, e};
}

MHA_GELU_INLINE void gelu_t(const float* u, std::size_t n, float* y) {
    for (std::size_t i = 0; i < n; ++i) y[i] = u[i] * normal_at(u[i]).cdf;
}

MHA_GELU_INLINE void gelu_backward_t(const float* u, const float* dy, std::size_t n, float* du) {
    const float inverse_sqrt_2pi = 0.398942280f;
    for (std::size_t i = 0; i < n; ++i) {
        const Normal f = normal_at(u[i]);
        du[i] = dy[i] * (f.cdf + u[i] * (f.exp_half_square * inverse_sqrt_2pi));
    }
}

#define MHA_GELU_VARIANT(suffix, attribute)                                                    \
    attribute void gelu_##suffix(const float* u, std::size_t n, float* y) { gelu_t(u, n, y); } \
    attribute void gelu_backward_##suffix(const float* u, const float* dy, std::size_t n,      \
                                          float* du) {                                         \
        gelu_backward_t(u, dy, n, du);                                                         \
    }

MHA_FOR_EACH_VARIANT(MHA_GELU_VARIANT)

struct GeluLoops {
    void (*forward)(const float*, std::size_t, float*);
    void (*backward)(const float*, const float*, std::size_t, float*);
};

// The loops built for the kernels in use; every build rounds alike (no fused multiply-add).
GeluLoops gelu_loops() {
    return for_kernels_in_use<GeluLoops>({gelu_baseline, gelu_backward_baseline},
                                         {gelu_avx2, gelu_backward_avx2},
                                         {gelu_avx512, gelu_backward_avx512});
}

// Elements per unit of work: the loops take about 16 operations an element.
constexpr std::uint64_t gelu_macs = 16;

}  // namespace

void gelu_values(const float* u, std::size_t n, float* y) { gelu_loops().forward(u, n, y); }

void gelu_values(const double* u, std::size_t n, double* y) {
    const double inverse_sqrt2 = 1.0 / std::sqrt(2.0);
    for (std::size_t i = 0; i < n; ++i) y[i] = 0.5 * u[i] * (1.0 + std::erf(u[i] * inverse_sqrt2));
}

void gelu_backward_values(const float* u, const float* dy, std::size_t n, float* du) {
    gelu_loops().backward(u, dy, n, du);
}

void gelu_backward_values(const double* u, const double* dy, std::size_t n, double* du) {
    const double inverse_sqrt2 = 1.0 / std::sqrt(2.0);
    const double inverse_sqrt_2pi = 1.0 / std::sqrt(2.0 * M_PI);
    for (std::size_t i = 0; i < n; ++i) {
        const double cdf = 0.5 * (1.0 + std::erf(u[i] * inverse_sqrt2));
        const double pdf = std::exp(-0.5 * u[i] * u[i]) * inverse_sqrt_2pi;
        du[i] = dy[i] * (cdf + u[i] * pdf);
    }
}

Tensor gelu(const Tensor& u, std::size_t threads, Workspace* workspace) {
    const Tensor in = u.contiguous();
    if (in.dry()) return new_dry(workspace, in.shape());
    Tensor y = new_uninitialised(workspace, in.shape());
    const std::size_t n = in.numel();
    parallel_for(n, threads_for(std::uint64_t(n) * gelu_macs, threads),
                 [&](std::size_t begin, std::size_t end) {
                     gelu_values(in.data() + begin, end - begin, y.data() + begin);
                 });
    return y;
}

Tensor gelu_backward(const Tensor& u, const Tensor& dy, std::size_t threads, Workspace* workspace) {
    const Tensor in = u.contiguous(), d = dy.contiguous();
    if (any_dry(in, d)) return new_dry(workspace, in.shape());
    Tensor du = new_uninitialised(workspace, in.shape());
    const std::size_t n = in.numel();
    parallel_for(n, threads_for(std::uint64_t(n) * gelu_macs, threads),
                 [&](std::size_t begin, std::size_t end) {
                     gelu_backward_values(in.data() + begin, d.data() + begin, end - begin,
                                          du.data() + begin);
                 });
    return du;
}

}  // namespace mha
