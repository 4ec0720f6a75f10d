#pragma once
// Greedy speculative decoding on a language model with an early-exit draft: the model's first
// L layers (then its final norm and head) guess K tokens after the text one at a time; the
// whole model then reads the text and the K guesses in one causal pass, which gives its own
// greedy token at every guess's position at once, and keeps the guesses up to the first it
// disagrees with. What it keeps is what greedy decoding with the whole model gives.

#include <cstddef>
#include <vector>

#include "core/forms/model.h"

namespace mha {

struct GreedyAcceptance {
    std::vector<std::size_t> drafted;   // (K) the draft's greedy tokens after the text
    std::vector<std::size_t> verified;  // (K + 1) the whole model's greedy token after the text
                                        //  and after each drafted token
    std::size_t accepted = 0;           // drafted tokens kept: those before the first that
                                        //  differs from verified's
};

// tokens (N >= 1, N + K <= the model's context); 1 <= draft_layers < the model's layers,
// draft >= 1. Throws mha::Error otherwise.
GreedyAcceptance greedy_acceptance(const Model& model, const std::vector<std::size_t>& tokens,
                                   std::size_t draft_layers, std::size_t draft,
                                   std::size_t threads);

// Throws the mha::Error greedy_acceptance would for a text of n tokens, before it runs.
void check_acceptance(const Model& model, std::size_t n, std::size_t draft_layers,
                      std::size_t draft);

// The model's first `layers` layers with its embeddings, final norm and head: the early exit.
Model early_exit(const Model& model, std::size_t layers);

// The greedy token after each position of logits (1, N, V): the first largest logit's index.
std::vector<std::size_t> greedy_tokens(const Tensor& logits);

}  // namespace mha
