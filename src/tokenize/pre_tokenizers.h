#pragma once
// A tokenizer.json's pre-tokenizer: ByteLevel, Split (on a pattern we implement or a string),
// Metaspace, and a Sequence of these, flattened into the list of steps. Each step splits every
// piece further (and ByteLevel maps its bytes to GPT-2's symbols), as Hugging Face's do.

#include "tokenize/aligned_text.h"
#include "tokenize/patterns.h"
#include "tokenize/tokenizer.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace mha::tokenizers {

// One piece on its way to the model: its code points (byte symbols after ByteLevel) and the
// rule that cut it out, for the trace ("\\p{N}{1,3}", "Metaspace", "whole text"; static).
struct Piece {
    AlignedText text;
    const char* rule;
};

// Where a Split puts what its pattern matches.
enum class SplitBehavior { isolated, removed, merged_with_previous, merged_with_next };

// Metaspace's prepend_scheme: the replacement before every piece, the text's first only, none.
enum class PrependScheme { always, first, never };

struct PreTokenizerStep {
    enum class Kind { byte_level, split, metaspace };
    Kind kind = Kind::byte_level;
    // byte_level
    bool add_prefix_space = false;
    bool use_regex = true;
    // split: a pattern we implement, or a string (literal)
    std::optional<Pattern> pattern;
    std::vector<std::uint32_t> literal;
    SplitBehavior behavior = SplitBehavior::isolated;
    // metaspace
    std::uint32_t replacement = 0x2581;
    PrependScheme prepend_scheme = PrependScheme::always;
    bool split = true;
};

// Every piece replaced by the step's pieces of it, in order; empty pieces go.
void pre_tokenize(const PreTokenizerStep& step, std::vector<Piece>& pieces);

// "Split(PATTERN, Isolated)", "ByteLevel(add_prefix_space false, use_regex false)", ...
std::string describe(const PreTokenizerStep& step);

// An added token marked normalized: its content as the normalizer makes it, and its id.
struct NormalizedAddedToken {
    std::vector<std::uint32_t> codes;
    std::string content;
    std::uint32_t id;
};

// The pre-tokenizer stage: the added tokens marked normalized split out of the normalized text
// first (leftmost, then longest), then the steps in order over the rest (none: one piece).
class JsonPreTokenizer : public PreTokenizer {
public:
    JsonPreTokenizer(std::vector<PreTokenizerStep> steps, std::vector<NormalizedAddedToken> added);
    std::string describe() const override;
    std::vector<PreToken> split(const NormalizedText& text) const override;
    void split_each(const NormalizedText& text,
                    const std::function<void(PreToken&)>& take) const override;
    // Whether it streams its pieces (GPT-2's one pass) rather than holding them all.
    bool streams() const { return one_pass_.has_value(); }

private:
    // The normalized added token at codes[at], longest first, or nullptr.
    const NormalizedAddedToken* added_at(const std::vector<std::uint32_t>& codes,
                                         std::size_t at) const;
    void split_stretch(AlignedText stretch, std::vector<PreToken>& out) const;

    std::vector<PreTokenizerStep> steps_;
    std::vector<NormalizedAddedToken> added_;
    // the steps when GPT-2's pre-tokenizer does the same in one streaming pass: ByteLevel with
    // its regex (GPT-2), or a Split on a pattern then ByteLevel without (Llama 3, Qwen 2)
    std::optional<ByteLevelPreTokenizer> one_pass_;
};

}  // namespace mha::tokenizers
