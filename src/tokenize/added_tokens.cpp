// Finding added tokens in the text: candidates by their first byte, the longest match wins.

#include "tokenize/added_tokens.h"

#include "tokenize/unicode.h"
#include "tokenize/utf8.h"

#include <utility>

namespace mha::tokenizers {

AddedTokens::AddedTokens(std::vector<AddedToken> tokens)
    : tokens_(std::move(tokens)), by_first_byte_(256) {
    for (std::size_t i = 0; i < tokens_.size(); ++i) {
        if (!tokens_[i].content.empty() && !tokens_[i].normalized)
            by_first_byte_[static_cast<unsigned char>(tokens_[i].content[0])].push_back(i);
    }
}

AddedMatch AddedTokens::at(std::string_view text, std::size_t at, std::size_t floor) const {
    if (tokens_.empty()) return {};
    const AddedToken* best = nullptr;
    for (const std::size_t i : by_first_byte_[static_cast<unsigned char>(text[at])]) {
        const AddedToken& token = tokens_[i];
        if ((!best || token.content.size() > best->content.size()) &&
            text.compare(at, token.content.size(), token.content) == 0)
            best = &token;
    }
    if (!best) return {};
    AddedMatch match{best, at, at + best->content.size()};
    while (best->lstrip && match.begin > floor) {
        std::size_t start = match.begin - 1;  // the previous character's first byte
        while (start > floor && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
        if (!unicode::is_space(code_point_at(text, start).code)) break;
        match.begin = start;
    }
    while (best->rstrip && match.end < text.size()) {
        const CodePoint next = code_point_at(text, match.end);
        if (!unicode::is_space(next.code)) break;
        match.end += next.length;
    }
    return match;
}

const std::string* AddedTokens::content(std::uint32_t id) const {
    for (const AddedToken& token : tokens_) {
        if (token.id == id) return &token.content;
    }
    return nullptr;
}

}  // namespace mha::tokenizers
