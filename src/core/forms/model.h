#pragma once
// A small trained language model over characters: token and position embeddings, a stack
// of pre-LN transformer blocks, a final LayerNorm and a linear head to the vocabulary.
//   x_0 = token_embedding[t] + position_embedding[0..N)     (1, N, d_model)
//   x_l+1 = block_l(x_l)                                     pre-LN, causal self-attention
//   logits = norm(x_L) @ lm_head.T + lm_head_bias            (1, N, V)

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/forms/block.h"
#include "core/pass/attention.h"

namespace mha {

struct ModelLayer {
    Weights attention;
    BlockWeights block;
    std::size_t heads;
};

struct Model {
    std::vector<std::uint32_t> vocab;  // (V) the Unicode code point of each token;
                                       //     token 0 is the unknown token (code point 0)
    Tensor token_embedding;            // (V, d_model)
    Tensor position_embedding;         // (context, d_model)
    std::vector<ModelLayer> layers;
    Tensor norm_weight, norm_bias;  // (d_model) each
    Tensor head_weight;             // (V, d_model)
    Tensor head_bias;               // (V)

    std::size_t d_model() const { return token_embedding.size(1); }
    std::size_t context() const { return position_embedding.size(0); }
    std::size_t vocab_size() const { return vocab.size(); }
    std::size_t parameter_count() const;
};

inline constexpr std::size_t unknown_token = 0;

struct ModelResult {
    Tensor output;                // (1, N, d_model)  the last block's output
    Tensor logits;                // (1, N, V)  before the softmax
    std::vector<Tensor> weights;  // per layer: (1, h, N, N) attention weights
};

// Runs tokens (N ≤ context, each < V) through the model with a causal mask. The tracer
// sees the embedding (step 0), every layer (layer `traced_layer`'s block step by step,
// attention and all, each other one as one step), the final norm (22) and the head (23). A
// model with dry arrays (a dry run) computes nothing and describes the same steps.
ModelResult forward_model(const Model& model, const std::vector<std::size_t>& tokens,
                          std::size_t traced_layer, std::size_t threads, Tracer& tracer);

}  // namespace mha
