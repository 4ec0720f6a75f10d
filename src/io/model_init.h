#pragma once
// A fresh character model (core/forms/model.h) with seeded values, initialised as train.py's
// CharTransformer is in PyTorch: token embeddings N(0, 0.02), position embeddings N(0, 0.2),
// nn.MultiheadAttention's in_proj Xavier-uniform and zero biases, nn.Linear's U(±1/√fan_in)
// weight and bias elsewhere (out_proj's bias then zeroed, as _reset_parameters does),
// LayerNorms 1 and 0.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/forms/model.h"

namespace mha {

struct ModelSizes {
    std::size_t layers = 2;
    std::size_t d_model = 64;
    std::size_t heads = 4;
    std::size_t d_ff = 256;
    std::size_t context = 128;
};

// Every parameter in one block of memory (each its own slice), drawn from io/init.h's
// model_stream of `seed` in train.py's state-dict order. vocab: (V) code points, vocab[0] = 0.
Model seeded_model(const std::vector<std::uint32_t>& vocab, const ModelSizes& sizes,
                   std::uint64_t seed);

}  // namespace mha
