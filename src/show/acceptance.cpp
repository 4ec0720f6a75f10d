// The greedy acceptance of an early-exit draft, in words.

#include "show/acceptance.h"

#include "show/format.h"
#include "show/model_view.h"
#include "show/text_layout.h"

namespace mha {

namespace {

// The names of tokens [0, count), each but the last followed by the comma.
std::vector<std::string> names(const std::vector<std::size_t>& tokens, std::size_t count,
                               const TokenWords& words) {
    std::vector<std::string> pieces;
    for (std::size_t i = 0; i < count; ++i)
        pieces.push_back(words.name(tokens[i]) + (i + 1 < count ? words.comma : ""));
    return pieces;
}

}  // namespace

TokenWords character_words(const std::vector<std::uint32_t>& vocab) {
    return {[&vocab](std::size_t token) { return character_name(vocab[token]); }, "",
            "character", "text"};
}

void print_acceptance(std::ostream& out, const GreedyAcceptance& a, std::size_t draft_layers,
                      std::size_t layers, const TokenWords& words) {
    const std::size_t K = a.drafted.size(), kept = a.accepted + 1;
    const std::string& unit = words.unit;
    const std::string& input = words.input;
    out << "\n";
    write_filled(out,
                 words_of("speculative decoding, greedy: the model's first " +
                          std::to_string(draft_layers) + " of its " + std::to_string(layers) +
                          " layers (then its final norm and head) draft " + counted(K, unit) +
                          " after the " + input + ", one at a time; the whole model reads the " +
                          input + " and the draft in one pass and picks its own " + unit +
                          " after the " + input + " and after each drafted one"),
                 " ", "", "  ");
    write_filled(out, names(a.drafted, K, words), " ", "  drafted:  ", "            ");
    write_filled(out, names(a.verified, K + 1, words), " ", "  verified: ", "            ");
    write_filled(out,
                 words_of("accepted: " + std::to_string(a.accepted) + " of " + std::to_string(K) +
                          ", then the whole model's " + words.name(a.verified[a.accepted]) +
                          ": " + counted(kept, unit) + " from one pass of the whole model, " +
                          (kept == 1 ? "the one" : "those") + " greedy decoding gives"),
                 " ", "  ", "    ");
}

}  // namespace mha
