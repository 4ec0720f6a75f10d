#pragma once
// tokenizer.json's TemplateProcessing (with a ByteLevel post-processor beside it, which changes
// no ids): the special tokens put before and after the text, a BOS for Llama 2 and 3.

#include "tokenize/tokenizer.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mha::tokenizers {

struct SpecialToken {
    std::uint32_t id;
    std::string piece;
};

class TemplatePostProcessor : public PostProcessor {
public:
    TemplatePostProcessor(std::vector<SpecialToken> before, std::vector<SpecialToken> after);
    void process(std::vector<TokenPiece>& tokens, bool with_special,
                 TokenizeTrace* trace) const override;
    void process(std::vector<std::uint32_t>& ids, bool with_special) const override;

private:
    std::vector<SpecialToken> before_, after_;
};

}  // namespace mha::tokenizers
