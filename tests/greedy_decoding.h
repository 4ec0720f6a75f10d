// Greedy decoding a token at a time, the plain way the early-exit draft's acceptance is checked
// against (tests/test_draft.cpp, tests/test_checkpoint.cpp).
#pragma once

#include <cstddef>
#include <vector>

#include "core/forms/speculate.h"

namespace test {

// The `count` tokens greedy decoding gives after `tokens`, each from a forward of the model's
// first `layers` layers over everything before it.
inline std::vector<std::size_t> greedy_decoding(const mha::EarlyExits& model,
                                                std::vector<std::size_t> tokens,
                                                std::size_t layers, std::size_t count) {
    std::vector<std::size_t> decoded;
    for (std::size_t k = 0; k < count; ++k) {
        decoded.push_back(mha::greedy_tokens(model.logits(tokens, layers)).back());
        tokens.push_back(decoded.back());
    }
    return decoded;
}

}  // namespace test
