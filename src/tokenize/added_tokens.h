#pragma once
// A tokenizer.json's added tokens (<|begin_of_text|>, <s>, ...): found in the text before the
// normalizer sees it, leftmost and then longest first, as Hugging Face's tokenizers split them
// (those marked normalized are found after the normalizer, by the pre-tokenizer stage).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mha::tokenizers {

struct AddedToken {
    std::string content;
    std::uint32_t id;
    bool special;
    bool normalized = false;  // found in the normalized text, not in the text as given
    bool lstrip = false;      // takes the white space before it, as part of its match
    bool rstrip = false;      // takes the white space after it
};

// Where an added token was found: the token, and the bytes [begin, end) it takes (its text,
// and the white space around it that lstrip and rstrip give it).
struct AddedMatch {
    const AddedToken* token = nullptr;
    std::size_t begin = 0, end = 0;
};

class AddedTokens {
public:
    AddedTokens() = default;
    explicit AddedTokens(std::vector<AddedToken> tokens);

    // The longest added token not marked normalized that starts at text[at] (no token when
    // none does); its lstrip takes white space back to `floor` at most.
    AddedMatch at(std::string_view text, std::size_t at, std::size_t floor) const;

    // The content of the added token with this id, or nullptr.
    const std::string* content(std::uint32_t id) const;

    bool empty() const { return tokens_.empty(); }

private:
    std::vector<AddedToken> tokens_;
    std::vector<std::vector<std::size_t>> by_first_byte_;  // (256) indices into tokens_
};

}  // namespace mha::tokenizers
