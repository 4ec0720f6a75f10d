// Greedy speculative decoding with an early-exit draft.

#include "core/forms/speculate.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace mha {

void check_acceptance(std::size_t layers, std::size_t context, std::size_t n,
                      std::size_t draft_layers, std::size_t draft) {
    if (draft_layers == 0 || draft_layers >= layers) {
        throw Error("an early-exit draft of " + std::to_string(draft_layers) + " layers of a " +
                    std::to_string(layers) + "-layer model; the draft takes 1 to " +
                    std::to_string(layers - 1) + " layers, fewer than the model it drafts for");
    }
    if (draft == 0 || n == 0 || n + draft > context) {
        throw Error("a prompt of " + std::to_string(n) + " tokens and a draft of " +
                    std::to_string(draft) + " need " + std::to_string(n + draft) +
                    " positions; the model's context is " + std::to_string(context));
    }
}

EarlyExits early_exits(const Model& model, std::size_t threads) {
    EarlyExits exits;
    exits.layers = model.layers.size();
    exits.context = model.context();
    exits.logits = [&model, threads](const std::vector<std::size_t>& tokens, std::size_t layers) {
        ModelSource in_memory;
        in_memory.layer = [&model](std::size_t l) { return model.layers[l]; };
        return early_exit_logits(model, in_memory, tokens, layers, threads);
    };
    return exits;
}

Tensor early_exit_logits(const Model& model, ModelSource source,
                         const std::vector<std::size_t>& tokens, std::size_t layers,
                         std::size_t threads) {
    source.layers = layers;
    NullTracer none;
    ModelPass logits_only;
    logits_only.every_layer_weights = false;
    return forward_model(model, source, tokens, 0, threads, none, logits_only).logits;
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

GreedyAcceptance greedy_acceptance(const EarlyExits& model, const std::vector<std::size_t>& tokens,
                                   std::size_t draft_layers, std::size_t draft) {
    check_acceptance(model.layers, model.context, tokens.size(), draft_layers, draft);
    GreedyAcceptance result;
    std::vector<std::size_t> sequence = tokens;
    for (std::size_t k = 0; k < draft; ++k) {  // the draft guesses one token at a time
        sequence.push_back(greedy_tokens(model.logits(sequence, draft_layers)).back());
        result.drafted.push_back(sequence.back());
    }
    // the whole model on the text and every guess at once: its greedy token at each position
    const std::vector<std::size_t> all = greedy_tokens(model.logits(sequence, model.layers));
    result.verified.assign(all.end() - std::ptrdiff_t(draft + 1), all.end());
    while (result.accepted < draft &&
           result.drafted[result.accepted] == result.verified[result.accepted])
        ++result.accepted;
    return result;
}

GreedyAcceptance greedy_acceptance(const Model& model, const std::vector<std::size_t>& tokens,
                                   std::size_t draft_layers, std::size_t draft,
                                   std::size_t threads) {
    return greedy_acceptance(early_exits(model, threads), tokens, draft_layers, draft);
}

}  // namespace mha
