// The template's special tokens around the text, each recorded in the trace where it lands.

#include "tokenize/post_processors.h"

#include <utility>

namespace mha::tokenizers {

TemplatePostProcessor::TemplatePostProcessor(std::vector<SpecialToken> before,
                                             std::vector<SpecialToken> after)
    : before_(std::move(before)), after_(std::move(after)) {}

void TemplatePostProcessor::process(std::vector<TokenPiece>& tokens, bool with_special,
                                    TokenizeTrace* trace) const {
    if (!with_special) return;
    std::vector<TokenPiece> out;
    out.reserve(before_.size() + tokens.size() + after_.size());
    const std::size_t end = tokens.empty() ? 0 : tokens.back().end;
    const auto add = [&](const SpecialToken& special, std::size_t at) {
        if (trace) trace->specials.push_back({out.size(), special.id, special.piece});
        out.push_back({special.id, special.piece, at, at});
    };
    for (const SpecialToken& special : before_) add(special, 0);
    out.insert(out.end(), tokens.begin(), tokens.end());
    for (const SpecialToken& special : after_) add(special, end);
    tokens = std::move(out);
}

}  // namespace mha::tokenizers
