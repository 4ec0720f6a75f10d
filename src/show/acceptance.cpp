// The greedy acceptance of an early-exit draft, in words.

#include "show/acceptance.h"

#include <string>

#include "show/model_view.h"
#include "show/text_layout.h"

namespace mha {

namespace {

// "'t' 'h' 'e'" for tokens [first, first + count).
std::vector<std::string> names(const std::vector<std::size_t>& tokens, std::size_t count,
                               const std::vector<std::uint32_t>& vocab) {
    std::vector<std::string> pieces;
    for (std::size_t i = 0; i < count; ++i) pieces.push_back(character_name(vocab[tokens[i]]));
    return pieces;
}

}  // namespace

void print_acceptance(std::ostream& out, const GreedyAcceptance& a, std::size_t draft_layers,
                      std::size_t layers, const std::vector<std::uint32_t>& vocab) {
    const std::size_t K = a.drafted.size();
    out << "\n";
    write_filled(out,
                 words_of("speculative decoding, greedy: the model's first " +
                          std::to_string(draft_layers) + " of its " + std::to_string(layers) +
                          " layers (then its final norm and head) draft " + std::to_string(K) +
                          " characters after the text, one at a time; the whole model reads the "
                          "text and the draft in one pass and picks its own character after the "
                          "text and after each drafted one"),
                 " ", "", "  ");
    write_filled(out, names(a.drafted, K, vocab), " ", "  drafted:  ", "            ");
    write_filled(out, names(a.verified, K + 1, vocab), " ", "  verified: ", "            ");
    write_filled(out,
                 words_of("accepted: " + std::to_string(a.accepted) + " of " + std::to_string(K) +
                          ", then the whole model's " +
                          character_name(vocab[a.verified[a.accepted]]) + ": " +
                          std::to_string(a.accepted + 1) +
                          " characters from one pass of the whole model, those greedy decoding "
                          "gives"),
                 " ", "  ", "    ");
}

}  // namespace mha
