// Portable seeded weights and inputs.

#include "io/init.h"

#include <cmath>

namespace mha {

namespace {

constexpr std::uint32_t weights_stream = 1;
constexpr std::uint32_t inputs_stream = 2;
constexpr double two_pi = 6.283185307179586;

Tensor uniform_tensor(Random& random, Shape shape, float bound) {
    Tensor t(std::move(shape));
    float* values = t.data();
    for (std::size_t i = 0; i < t.numel(); ++i) values[i] = random.uniform(-bound, bound);
    return t;
}

Tensor normal_tensor(Random& random, Shape shape) {
    Tensor t(std::move(shape));
    float* values = t.data();
    for (std::size_t i = 0; i < t.numel(); ++i) values[i] = random.normal();
    return t;
}

}  // namespace

Random::Random(std::uint64_t seed, std::uint32_t stream) {
    std::seed_seq sequence{std::uint32_t(seed), std::uint32_t(seed >> 32), stream};
    bits_.seed(sequence);
}

float Random::uniform() {
    return float(bits_() >> 8) * (1.0f / 16777216.0f);
}

float Random::uniform(float low, float high) {
    return low + (high - low) * uniform();
}

float Random::normal() {
    const double u1 = 1.0 - uniform();  // (0, 1]: the logarithm stays finite
    const double u2 = uniform();
    return float(std::sqrt(-2.0 * std::log(u1)) * std::cos(two_pi * u2));
}

Weights seeded_weights(std::size_t d_model, bool bias, bool random_bias, std::uint64_t seed) {
    Random random(seed, weights_stream);
    const float xavier = float(std::sqrt(6.0 / double(2 * d_model)));
    const float bias_bound = float(1.0 / std::sqrt(double(d_model)));
    Weights w;
    for (Tensor* t : {&w.w_q, &w.w_k, &w.w_v, &w.w_o}) {
        *t = uniform_tensor(random, {d_model, d_model}, xavier);
    }
    if (bias) {
        for (Tensor* b : {&w.b_q, &w.b_k, &w.b_v, &w.b_o}) {
            *b = random_bias ? uniform_tensor(random, {d_model}, bias_bound) : Tensor({d_model});
        }
    }
    return w;
}

Inputs seeded_inputs(const Sizes& s, bool self_attention, std::uint64_t seed) {
    Random random(seed, inputs_stream);
    const Tensor x = normal_tensor(random, {s.batch, s.seq_len, s.d_model});
    if (self_attention) return {x, x, x};
    const Tensor memory = normal_tensor(random, {s.batch, s.kv_len, s.kdim});
    if (s.vdim == s.kdim) return {x, memory, memory};
    return {x, memory, normal_tensor(random, {s.batch, s.kv_len, s.vdim})};
}

}  // namespace mha
