// GELU's tanh form and SiLU on float lanes (core/layers/activation.h) against the functions
// computed here in double from their definitions, on every kernel variant.

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <vector>

#include "core/layers/activation.h"
#include "kernel_variants.h"

namespace test_activation {

namespace {

// The bound activation.h states: |y − u σ(t)| <= activation_tolerance · |u σ(t)| · (1 + |t|),
// where u σ(t) is computed in double (the 1 + |t|: t itself is rounded to float, and e^t
// carries its error relatively, |t| times over); and where σ(t) is below e^(−87) (the lanes'
// exp gives 0 there) y may be 0 instead.
constexpr double activation_tolerance = 4e-7;

struct Exact {
    double t, value;  // the sigmoid's argument and u σ(t)
};

// u σ(t) in double, σ from e^(−|t|) on both sides. (0.5 u (1 + tanh z), as PyTorch writes
// GELU's tanh form, cancels to exactly 0 in double once tanh z rounds to −1, from u ≈ −7.2.)
Exact times_sigmoid(double u, double t) {
    const double e = std::exp(-std::fabs(t));
    return {t, u * (t >= 0 ? 1.0 : e) / (1.0 + e)};
}
Exact silu_double(double u) { return times_sigmoid(u, u); }
Exact gelu_tanh_double(double u) {
    return times_sigmoid(u, 2 * std::sqrt(2.0 / M_PI) * (u + 0.044715 * u * u * u));
}

// Every float from -30 to 30 in steps of 1/64, a few near zero, and the far tails.
std::vector<float> sweep() {
    std::vector<float> u;
    for (int i = -30 * 64; i <= 30 * 64; ++i) u.push_back(float(i) / 64);
    for (float tiny : {1e-30f, 1e-8f, 3e-4f}) u.insert(u.end(), {tiny, -tiny});
    for (float far : {87.0f, 88.5f, 1e4f, 1e13f, 3e38f}) u.insert(u.end(), {far, -far});
    return u;
}

// The largest |y − u σ(t)| / (|u σ(t)| (1 + |t|)) over the sweep.
double worst_error(mha::Activation activation, Exact (*exact)(double)) {
    const std::vector<float> u = sweep();
    const mha::Tensor y = mha::activate(mha::Tensor({u.size()}, u), activation);
    double worst = 0;
    for (std::size_t i = 0; i < u.size(); ++i) {
        const Exact want = exact(u[i]);
        const double error = std::fabs(double(y.data()[i]) - want.value);
        if (error == 0) continue;
        if (y.data()[i] == 0 && want.t < -87) continue;
        worst = std::max(worst, error / (std::fabs(want.value) * (1 + std::fabs(want.t))));
    }
    return worst;
}

}  // namespace

TEST_CASE("SiLU and GELU's tanh form on float lanes: relative error within 4e-7 (1 + |t|)",
          "[activation]") {
    EACH_VARIANT();
    const double silu = worst_error(mha::Activation::Silu, silu_double);
    const double gelu_tanh = worst_error(mha::Activation::GeluTanh, gelu_tanh_double);
    CHECK(silu <= activation_tolerance);
    CHECK(gelu_tanh <= activation_tolerance);
}

TEST_CASE("SiLU and GELU's tanh form at the edges: zero, infinities, NaN", "[activation]") {
    const float inf = std::numeric_limits<float>::infinity();
    const std::vector<float> u = {0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN()};
    for (mha::Activation activation : {mha::Activation::Silu, mha::Activation::GeluTanh}) {
        const mha::Tensor y = mha::activate(mha::Tensor({u.size()}, u), activation);
        CHECK(y.data()[0] == 0.0f);
        CHECK(y.data()[1] == inf);             // u σ(∞) = ∞
        CHECK(std::isnan(y.data()[2]));        // −∞ · σ(−∞) = −∞ · 0, NaN as in PyTorch
        CHECK(std::isnan(y.data()[3]));
    }
}

}  // namespace test_activation
