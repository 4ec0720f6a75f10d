// Portable seeded weights and inputs.

#include "io/init.h"

#include <algorithm>
#include <cmath>

namespace mha {

namespace {

constexpr std::uint32_t weights_stream = 1;
constexpr std::uint32_t inputs_stream = 2;
constexpr std::uint32_t block_stream = 3;
constexpr std::uint32_t mla_stream = 4;
constexpr std::uint32_t grad_output_stream = 5;
constexpr double two_pi = 6.283185307179586;

// out[i] = U(-bound, bound) for i < count, a state block of draws at a time.
void draw_uniform(Random& random, float bound, float* out, std::size_t count) {
    for (std::size_t done = 0; done < count; done += Mt19937::state_size) {
        random.uniform(-bound, bound, out + done, std::min(Mt19937::state_size, count - done));
    }
}

Tensor normal_tensor(Random& random, Shape shape) {
    Tensor t(std::move(shape));
    float* values = t.data();
    const std::size_t count = t.numel();
    for (std::size_t i = 0; i < count; ++i) values[i] = random.normal();
    return t;
}

Mt19937 engine(std::uint64_t seed, std::uint32_t stream) {
    std::seed_seq sequence{std::uint32_t(seed), std::uint32_t(seed >> 32), stream};
    return Mt19937(sequence);
}

Mt19937 engine(std::uint64_t seed, std::uint32_t stream, std::uint64_t index) {
    std::seed_seq sequence{std::uint32_t(seed), std::uint32_t(seed >> 32), stream,
                           std::uint32_t(index), std::uint32_t(index >> 32)};
    return Mt19937(sequence);
}

}  // namespace

Tensor uniform_tensor(Random& random, Shape shape, float bound) {
    const std::size_t count = element_count(shape);
    std::vector<float> values = reserved_floats(count);
    values.resize(count);
    draw_uniform(random, bound, values.data(), count);
    return Tensor(std::move(shape), std::move(values));
}

Random::Random(std::uint64_t seed, std::uint32_t stream) : bits_(engine(seed, stream)) {}

Random::Random(std::uint64_t seed, std::uint32_t stream, std::uint64_t index)
    : bits_(engine(seed, stream, index)) {}

float Random::uniform() { return float(bits_() >> 8) * (1.0f / 16777216.0f); }

std::uint64_t Random::below(std::uint64_t n) {
    const std::uint64_t high = bits_();
    return ((high << 32) | bits_()) % n;
}

float Random::uniform(float low, float high) { return low + (high - low) * uniform(); }

void Random::uniform(float low, float high, float* out, std::size_t count) {
    bits_.uniform_floats(low, high - low, out, count);
}

float Random::normal() {
    const double u1 = 1.0 - uniform();  // (0, 1]: the logarithm stays finite
    const double u2 = uniform();
    return float(std::sqrt(-2.0 * std::log(u1)) * std::cos(two_pi * u2));
}

Weights seeded_weights(std::size_t d_model, bool bias, bool random_bias, std::uint64_t seed) {
    return seeded_weights(d_model, d_model, bias, random_bias, seed);
}

Weights seeded_weights(std::size_t d_model, std::size_t kv_width, bool bias, bool random_bias,
                       std::uint64_t seed) {
    return seeded_weights(d_model, d_model, kv_width, bias, random_bias, seed);
}

Weights seeded_weights(std::size_t d_model, std::size_t q_width, std::size_t kv_width, bool bias,
                       bool random_bias, std::uint64_t seed) {
    Random random(seed, weights_stream);
    const auto xavier = [d_model](std::size_t rows) {
        return float(std::sqrt(6.0 / double(d_model + rows)));
    };
    const float bias_bound = float(1.0 / std::sqrt(double(d_model)));
    // one block for the whole set, in the order of the draws; zero biases stay as mapped
    std::vector<Shape> shapes = {
        {q_width, d_model}, {kv_width, d_model}, {kv_width, d_model}, {d_model, q_width}};
    if (bias) shapes.insert(shapes.end(), {{q_width}, {kv_width}, {kv_width}, {d_model}});
    std::vector<Tensor> set = Tensor::in_one_block(shapes);
    const float bounds[] = {xavier(q_width), xavier(kv_width), xavier(kv_width), xavier(q_width),
                            bias_bound,      bias_bound,       bias_bound,       bias_bound};
    const std::size_t drawn = bias && random_bias ? 8 : 4;
    for (std::size_t i = 0; i < drawn; ++i) {
        draw_uniform(random, bounds[i], set[i].data(), set[i].numel());
    }
    Weights w;
    w.w_q = set[0];
    w.w_k = set[1];
    w.w_v = set[2];
    w.w_o = set[3];
    if (bias) {
        w.b_q = set[4];
        w.b_k = set[5];
        w.b_v = set[6];
        w.b_o = set[7];
    }
    return w;
}

MlaWeights seeded_mla_weights(const MlaSizes& s, std::uint64_t seed) {
    Random random(seed, mla_stream);
    const auto linear = [&random](std::size_t out, std::size_t in) {  // nn.Linear's U(±1/sqrt(in))
        return uniform_tensor(random, {out, in}, float(1.0 / std::sqrt(double(in))));
    };
    const std::size_t h = s.heads;
    MlaWeights w;
    w.w_q = linear(h * (s.d_nope + s.d_rope), s.d_model);
    w.w_kv_a = linear(s.d_latent + s.d_rope, s.d_model);
    w.kv_norm = Tensor({s.d_latent}, std::vector<float>(s.d_latent, 1.0f));
    w.w_kv_b = linear(h * (s.d_nope + s.d_v), s.d_latent);
    w.w_o = linear(s.d_model, h * s.d_v);
    return w;
}

BlockWeights seeded_block(std::size_t d_model, std::size_t d_ff, std::uint64_t seed) {
    Random random(seed, block_stream);
    BlockWeights w;
    w.norm1_weight = w.norm2_weight = Tensor({d_model}, std::vector<float>(d_model, 1.0f));
    w.norm1_bias = w.norm2_bias = Tensor({d_model});
    const float bound_1 = float(1.0 / std::sqrt(double(d_model)));
    const float bound_2 = float(1.0 / std::sqrt(double(d_ff)));
    w.w_1 = uniform_tensor(random, {d_ff, d_model}, bound_1);
    w.b_1 = uniform_tensor(random, {d_ff}, bound_1);
    w.w_2 = uniform_tensor(random, {d_model, d_ff}, bound_2);
    w.b_2 = uniform_tensor(random, {d_model}, bound_2);
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

Tensor seeded_grad_output(const Sizes& s, std::uint64_t seed) {
    Random random(seed, grad_output_stream);
    return normal_tensor(random, {s.batch, s.seq_len, s.d_model});
}

}  // namespace mha
