#pragma once
// The greedy acceptance of an early-exit draft (--model or --checkpoint with --draft K
// --draft-layers L), in words.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "core/forms/speculate.h"

namespace mha {

// How the acceptance words its tokens.
struct TokenWords {
    std::function<std::string(std::size_t token)> name;  // "'t'" (--model), "17 Ġthe" or "17"
    std::string comma;  // after each name but the last of a list: "" or ","
    std::string unit;   // a token is a "character" (--model) or a "token"
    std::string input;  // what the draft follows: the "text" or the "prompt"
};

// --model's words: each token its character in vocab (V), the code point per token.
TokenWords character_words(const std::vector<std::uint32_t>& vocab);

// "draft (the first L of the model's Y layers): ...", what the whole model picks at each
// position, and how many guesses it accepts.
void print_acceptance(std::ostream& out, const GreedyAcceptance& acceptance,
                      std::size_t draft_layers, std::size_t layers, const TokenWords& words);

}  // namespace mha
