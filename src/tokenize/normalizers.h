#pragma once
// A tokenizer.json's normalizer: Prepend, Replace (of a string), NFC, and a Sequence of these,
// flattened into the list of steps; each rewrites the text and keeps where each part came from.

#include "tokenize/aligned_text.h"
#include "tokenize/tokenizer.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mha::tokenizers {

struct NormalizerStep {
    enum class Kind { prepend, replace, nfc };
    Kind kind = Kind::nfc;
    std::vector<std::uint32_t> pattern;  // replace: the string replaced
    std::vector<std::uint32_t> content;  // prepend: the prefix; replace: what replaces it
};

// The text after the step (Prepend leaves an empty text empty, as Hugging Face's does).
NormalizedText normalize(const NormalizerStep& step, const NormalizedText& text);

// "Prepend(\"▁\")", "Replace(\" \" -> \"▁\")", "NFC", for the trace.
std::string describe(const NormalizerStep& step);

// The normalizer stage: the steps in order, each recorded in the trace.
class JsonNormalizer : public Normalizer {
public:
    explicit JsonNormalizer(std::vector<NormalizerStep> steps);
    NormalizedText normalize(NormalizedText text, TokenizeTrace* trace) const override;

private:
    std::vector<NormalizerStep> steps_;
};

}  // namespace mha::tokenizers
