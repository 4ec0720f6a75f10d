#pragma once
// The greedy acceptance of an early-exit draft (--model --draft K --draft-layers L), in words.

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <vector>

#include "core/forms/speculate.h"

namespace mha {

// "draft (the first L of the model's Y layers): ...", what the whole model picks at each
// position, and how many guesses it accepts; vocab (V) the code point per token.
void print_acceptance(std::ostream& out, const GreedyAcceptance& acceptance,
                      std::size_t draft_layers, std::size_t layers,
                      const std::vector<std::uint32_t>& vocab);

}  // namespace mha
