#pragma once
// Greedy speculative decoding on a language model with an early-exit draft: the model's first
// L layers (then its final norm and head) guess K tokens after the text one at a time; the
// whole model then reads the text and the K guesses in one causal pass, which gives its own
// greedy token at every guess's position at once, and keeps the guesses up to the first it
// disagrees with. What it keeps is what greedy decoding with the whole model gives.

#include <cstddef>
#include <functional>
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

// A language model that can stop after any number of its layers: the model in memory
// (--model), or a checkpoint read a layer at a time (io/checkpoint/load.h).
struct EarlyExits {
    std::size_t layers = 0;   // the whole model's
    std::size_t context = 0;  // the positions it reads
    // logits (1, N, V) of the first `layers` layers, then the final norm and the head, on
    // tokens (1 <= N <= context)
    std::function<Tensor(const std::vector<std::size_t>& tokens, std::size_t layers)> logits;
};

// The model in memory as early exits; the model must outlive them.
EarlyExits early_exits(const Model& model, std::size_t threads);

// The logits (1, N, V) of source's first `layers` layers, then the model's final norm and head,
// on tokens: untraced, every attention weight but layer 0's let go as its layer ends.
Tensor early_exit_logits(const Model& model, ModelSource source,
                         const std::vector<std::size_t>& tokens, std::size_t layers,
                         std::size_t threads);

// tokens (N >= 1, N + K <= the model's context); 1 <= draft_layers < the model's layers,
// draft >= 1. Throws mha::Error otherwise.
GreedyAcceptance greedy_acceptance(const EarlyExits& model, const std::vector<std::size_t>& tokens,
                                   std::size_t draft_layers, std::size_t draft);
GreedyAcceptance greedy_acceptance(const Model& model, const std::vector<std::size_t>& tokens,
                                   std::size_t draft_layers, std::size_t draft,
                                   std::size_t threads);

// Throws the mha::Error greedy_acceptance would for a prompt of n tokens, before it runs, on a
// model of `layers` layers reading `context` positions.
void check_acceptance(std::size_t layers, std::size_t context, std::size_t n,
                      std::size_t draft_layers, std::size_t draft);

// The greedy token after each position of logits (1, N, V): the first largest logit's index.
std::vector<std::size_t> greedy_tokens(const Tensor& logits);

}  // namespace mha
