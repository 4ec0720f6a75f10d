// Greedy speculative decoding with an early-exit draft.

#include "core/forms/speculate.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace mha {

void check_acceptance(const Model& model, std::size_t n, std::size_t draft_layers,
                      std::size_t draft) {
    const std::size_t layers = model.layers.size();
    if (draft_layers == 0 || draft_layers >= layers) {
        throw Error("an early-exit draft of " + std::to_string(draft_layers) + " layers of a " +
                    std::to_string(layers) + "-layer model; the draft takes 1 to " +
                    std::to_string(layers - 1) + " layers, fewer than the model it drafts for");
    }
    if (draft == 0 || n == 0 || n + draft > model.context()) {
        throw Error("a text of " + std::to_string(n) + " tokens and a draft of " +
                    std::to_string(draft) + " need " + std::to_string(n + draft) +
                    " positions; the model's context is " + std::to_string(model.context()));
    }
}

Model early_exit(const Model& model, std::size_t layers) {
    Model early = model;
    early.layers.resize(std::min(layers, early.layers.size()));
    return early;
}

std::vector<std::size_t> greedy_tokens(const Tensor& logits) {
    const Tensor packed = logits.contiguous();
    const std::size_t n = packed.size(1), v = packed.size(2);
    std::vector<std::size_t> tokens(n);
    for (std::size_t i = 0; i < n; ++i) {
        const float* row = packed.data() + i * v;
        tokens[i] = std::size_t(std::max_element(row, row + v) - row);
    }
    return tokens;
}

GreedyAcceptance greedy_acceptance(const Model& model, const std::vector<std::size_t>& tokens,
                                   std::size_t draft_layers, std::size_t draft,
                                   std::size_t threads) {
    check_acceptance(model, tokens.size(), draft_layers, draft);
    NullTracer none;
    const Model early = early_exit(model, draft_layers);
    GreedyAcceptance result;
    std::vector<std::size_t> sequence = tokens;
    for (std::size_t k = 0; k < draft; ++k) {  // the draft guesses one token at a time
        const ModelResult guess = forward_model(early, sequence, 0, threads, none);
        sequence.push_back(greedy_tokens(guess.logits).back());
        result.drafted.push_back(sequence.back());
    }
    // the whole model on the text and every guess at once: its greedy token at each position
    const std::vector<std::size_t> all =
        greedy_tokens(forward_model(model, sequence, 0, threads, none).logits);
    result.verified.assign(all.end() - std::ptrdiff_t(draft + 1), all.end());
    while (result.accepted < draft &&
           result.drafted[result.accepted] == result.verified[result.accepted])
        ++result.accepted;
    return result;
}

}  // namespace mha
