// GELU's tanh form and SiLU, alone or gating a second projection, element by element.

#include "core/layers/activation.h"

#include <cmath>

#include "core/error.h"
#include "core/kernels/variant_builds.h"
#include "core/kernels/vector_exp.h"
#include "core/layers/gelu.h"
#include "core/threads/parallel.h"

namespace mha {

namespace {

constexpr std::uint64_t activation_work = 16;  // an element's exp and division, in multiply-adds

#define MHA_ACTIVATION_INLINE inline __attribute__((always_inline))

// u · σ(t), σ(t) = 1 / (1 + e^(−t)), from e = e^(−|t|) so that no exponent is positive: σ(t) =
// 1 / (1 + e) for t >= 0 and e / (1 + e) below, each branch free of cancellation.
MHA_ACTIVATION_INLINE float times_sigmoid(float u, float t) {
    const float e = exp_nonpositive_t(-std::fabs(t));
    return u * ((t >= 0.0f ? 1.0f : e) / (1.0f + e));
}

// SiLU: u σ(u). GELU's tanh form: u/2 (1 + tanh z) = u σ(2z), z = sqrt(2/π) (u + 0.044715 u³),
// since 1 + tanh z = 2 / (1 + e^(−2z)).
MHA_ACTIVATION_INLINE void silu_t(const float* u, std::size_t n, float* y) {
    for (std::size_t i = 0; i < n; ++i) y[i] = times_sigmoid(u[i], u[i]);
}
MHA_ACTIVATION_INLINE void gelu_tanh_t(const float* u, std::size_t n, float* y) {
    const float two_root_two_over_pi = 1.59576912f;
    for (std::size_t i = 0; i < n; ++i) {
        const float cube = u[i] * u[i] * u[i];
        y[i] = times_sigmoid(u[i], two_root_two_over_pi * (u[i] + 0.044715f * cube));
    }
}

#define MHA_ACTIVATION_VARIANT(suffix, attribute)                                              \
    attribute void silu_##suffix(const float* u, std::size_t n, float* y) { silu_t(u, n, y); } \
    attribute void gelu_tanh_##suffix(const float* u, std::size_t n, float* y) {               \
        gelu_tanh_t(u, n, y);                                                                  \
    }

MHA_FOR_EACH_VARIANT(MHA_ACTIVATION_VARIANT)

using Loop = void (*)(const float*, std::size_t, float*);

// The loop built for the kernels in use; every build rounds alike (no fused multiply-add).
Loop loop_for(Activation activation) {
    return activation == Activation::Silu
               ? for_kernels_in_use<Loop>(silu_baseline, silu_avx2, silu_avx512)
               : for_kernels_in_use<Loop>(gelu_tanh_baseline, gelu_tanh_avx2, gelu_tanh_avx512);
}

// y[i] = act(u[i]) (times up[i] when up is given), for i in [begin, end).
void activate_range(const float* u, const float* up, Activation activation, std::size_t begin,
                    std::size_t end, float* y) {
    if (activation == Activation::Gelu) {
        gelu_values(u + begin, end - begin, y + begin);
    } else {
        loop_for(activation)(u + begin, end - begin, y + begin);
    }
    if (up) {
        for (std::size_t i = begin; i < end; ++i) y[i] *= up[i];
    }
}

Tensor activate_into(const Tensor& u, const Tensor* up, Activation activation, std::size_t threads,
                     Workspace* workspace) {
    const Tensor in = u.contiguous();
    if (in.dry() || (up && up->dry())) return new_dry(workspace, in.shape());
    Tensor y = new_uninitialised(workspace, in.shape());
    const std::size_t n = in.numel();
    const float* gated = up ? up->data() : nullptr;
    parallel_for(n, threads_for(std::uint64_t(n) * activation_work, threads),
                 [&](std::size_t begin, std::size_t end) {
                     activate_range(in.data(), gated, activation, begin, end, y.data());
                 });
    return y;
}

}  // namespace

const char* activation_name(Activation activation) {
    switch (activation) {
        case Activation::Gelu:
            return "F.gelu";
        case Activation::GeluTanh:
            return "gelu_tanh";
        case Activation::Silu:
            return "F.silu";
    }
    return "";
}

Tensor activate(const Tensor& u, Activation activation, std::size_t threads, Workspace* workspace) {
    return activate_into(u, nullptr, activation, threads, workspace);
}

Tensor activate_gated(const Tensor& gate, const Tensor& up, Activation activation,
                      std::size_t threads, Workspace* workspace) {
    if (gate.shape() != up.shape()) {
        throw Error("the gated feed-forward's gate " + to_string(gate.shape()) + " and up " +
                    to_string(up.shape()) + " differ in shape");
    }
    const Tensor u = up.contiguous();
    return activate_into(gate, &u, activation, threads, workspace);
}

}  // namespace mha
