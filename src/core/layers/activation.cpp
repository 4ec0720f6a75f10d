// GELU's tanh form and SiLU, alone or gating a second projection, element by element.

#include "core/layers/activation.h"

#include <cmath>

#include "core/error.h"
#include "core/layers/gelu.h"
#include "core/threads/parallel.h"

namespace mha {

namespace {

constexpr std::uint64_t activation_work = 16;  // an element's tanh or exp, in multiply-adds

// act(u) in double, for one value.
double activated(double u, Activation activation) {
    if (activation == Activation::Silu) return u / (1.0 + std::exp(-u));
    const double root_two_over_pi = 0.79788456080286535588;
    return 0.5 * u * (1.0 + std::tanh(root_two_over_pi * (u + 0.044715 * u * u * u)));
}

// y[i] = act(u[i]) (times up[i] when up is given), for i in [begin, end).
void activate_range(const float* u, const float* up, Activation activation, std::size_t begin,
                    std::size_t end, float* y) {
    if (activation == Activation::Gelu) {
        gelu_values(u + begin, end - begin, y + begin);
    } else {
        for (std::size_t i = begin; i < end; ++i) y[i] = float(activated(u[i], activation));
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
