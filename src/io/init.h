#pragma once
// Seeded values that are the same with every compiler: std::mt19937's bits (io/mt19937.h)
// turned into floats by our own code (the standard distributions differ between libraries).

#include "core/forms/block.h"
#include "core/pass/attention.h"
#include "core/pass/mla.h"

#include <cstdint>

#include "io/mt19937.h"

namespace mha {

// The streams of mha train's draws (io/init.cpp's own are 1 to 5): the model's initial
// weights, the batch of each step, and the evaluation's fixed texts.
inline constexpr std::uint32_t model_stream = 6;
inline constexpr std::uint32_t batch_stream = 7;
inline constexpr std::uint32_t evaluation_stream = 8;

class Random {
public:
    // `stream` separates independent sequences drawn from the same seed.
    Random(std::uint64_t seed, std::uint32_t stream);
    // The `index`th sequence of a stream (mha train: the batch of step `index`), drawn from
    // no other: any index is reached without drawing the ones before it.
    Random(std::uint64_t seed, std::uint32_t stream, std::uint64_t index);
    float uniform();                       // [0, 1), 24 random bits
    std::uint64_t below(std::uint64_t n);  // 0 to n - 1 (n ≥ 1) from two draws, 64 bits mod n
    float uniform(float low, float high);
    // out[i] = uniform(low, high) for i < count, in order, a block of draws at a time.
    void uniform(float low, float high, float* out, std::size_t count);
    float normal();  // mean 0, variance 1 (Box-Muller)

private:
    Mt19937 bits_;
};

// A tensor of U(-bound, bound) draws in C order, a state block of draws at a time.
Tensor uniform_tensor(Random& random, Shape shape, float bound);

// Xavier-uniform projections as nn.MultiheadAttention initialises them:
// U(-a, a) with a = sqrt(6 / (fan_in + fan_out)). Biases zero, or when
// random_bias U(-1/sqrt(d_model), 1/sqrt(d_model)) as nn.Linear draws them.
Weights seeded_weights(std::size_t d_model, bool bias, bool random_bias, std::uint64_t seed);

// The same with W_k and W_v of kv_width = G·d_k rows (grouped-query attention);
// their Xavier bound is sqrt(6 / (d_model + kv_width)).
Weights seeded_weights(std::size_t d_model, std::size_t kv_width, bool bias, bool random_bias,
                       std::uint64_t seed);

// The same with heads of any width: W_q (q_width = h·d_k, d_model), W_o (d_model, q_width),
// drawn in the same order, so q_width = d_model gives the same numbers as above.
Weights seeded_weights(std::size_t d_model, std::size_t q_width, std::size_t kv_width, bool bias,
                       bool random_bias, std::uint64_t seed);

// MLA's five matrices drawn like nn.Linear's, U(-1/sqrt(in), 1/sqrt(in)), and the latent's
// RMSNorm weight 1, as DeepSeek-V2's modules initialise them.
MlaWeights seeded_mla_weights(const MlaSizes& sizes, std::uint64_t seed);

// A transformer block as nn.TransformerEncoderLayer initialises it: LayerNorms with
// weight 1 and bias 0; linear1 and linear2 drawn like nn.Linear, weight and bias
// U(-1/sqrt(in), 1/sqrt(in)).
BlockWeights seeded_block(std::size_t d_model, std::size_t d_ff, std::uint64_t seed);

// Standard-normal inputs of the given sizes. Self-attention: one x (B, N, d_model)
// used as query, key and value. Cross-attention: x_q (B, N, d_model) and one
// memory (B, M, kdim) used as both key and value, as a decoder attends to its
// encoder's output (a separate x_v (B, M, vdim) only when vdim differs).
Inputs seeded_inputs(const Sizes& sizes, bool self_attention, std::uint64_t seed);

// --backward without --grad-output: dO (B, N, d_model) standard normal, a stream of its own,
// so the seed's weights and inputs stay what they are without --backward.
Tensor seeded_grad_output(const Sizes& sizes, std::uint64_t seed);

}  // namespace mha
