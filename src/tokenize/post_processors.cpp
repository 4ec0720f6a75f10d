// The template's special tokens around the text, each recorded in the trace where it lands.

#include "tokenize/post_processors.h"

#include <utility>

namespace mha::tokenizers {

TemplatePostProcessor::TemplatePostProcessor(std::vector<SpecialToken> before,
                                             std::vector<SpecialToken> after)
    : before_(std::move(before)), after_(std::move(after)) {}

namespace {

// tokens with before's and after's tokens around them, made(special, position, at the end?).
template <typename Token, typename Made>
void surround(std::vector<Token>& tokens, const std::vector<SpecialToken>& before,
              const std::vector<SpecialToken>& after, const Made& made) {
    std::vector<Token> out;
    out.reserve(before.size() + tokens.size() + after.size());
    for (const SpecialToken& special : before) out.push_back(made(special, out.size(), false));
    out.insert(out.end(), tokens.begin(), tokens.end());
    for (const SpecialToken& special : after) out.push_back(made(special, out.size(), true));
    tokens = std::move(out);
}

}  // namespace

void TemplatePostProcessor::process(std::vector<TokenPiece>& tokens, bool with_special,
                                    TokenizeTrace* trace) const {
    if (!with_special) return;
    const std::size_t end = tokens.empty() ? 0 : tokens.back().end;
    surround(tokens, before_, after_, [&](const SpecialToken& special, std::size_t position,
                                          bool last) {
        if (trace) trace->specials.push_back({position, special.id, special.piece});
        const std::size_t at = last ? end : 0;
        return TokenPiece{special.id, special.piece, at, at};
    });
}

void TemplatePostProcessor::process(std::vector<std::uint32_t>& ids, bool with_special) const {
    if (!with_special) return;
    surround(ids, before_, after_,
             [](const SpecialToken& special, std::size_t, bool) { return special.id; });
}

}  // namespace mha::tokenizers
