// Finding added tokens in the text: candidates by their first byte, the longest match wins.

#include "tokenize/added_tokens.h"

#include <utility>

namespace mha::tokenizers {

AddedTokens::AddedTokens(std::vector<AddedToken> tokens)
    : tokens_(std::move(tokens)), by_first_byte_(256) {
    for (std::size_t i = 0; i < tokens_.size(); ++i) {
        if (!tokens_[i].content.empty() && !tokens_[i].normalized)
            by_first_byte_[static_cast<unsigned char>(tokens_[i].content[0])].push_back(i);
    }
}

const AddedToken* AddedTokens::at(std::string_view text, std::size_t at) const {
    if (tokens_.empty()) return nullptr;
    const AddedToken* best = nullptr;
    for (const std::size_t i : by_first_byte_[static_cast<unsigned char>(text[at])]) {
        const AddedToken& token = tokens_[i];
        if ((!best || token.content.size() > best->content.size()) &&
            text.compare(at, token.content.size(), token.content) == 0)
            best = &token;
    }
    return best;
}

const std::string* AddedTokens::content(std::uint32_t id) const {
    for (const AddedToken& token : tokens_) {
        if (token.id == id) return &token.content;
    }
    return nullptr;
}

}  // namespace mha::tokenizers
