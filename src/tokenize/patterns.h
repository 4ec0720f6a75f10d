#pragma once
// The pre-tokenizer patterns, hand-written as matchers (std::regex has no \p{L}). Each
// splits the text as the regex's findall does, left to right, and says which branch of the
// alternation matched each piece, for the trace. A pattern is chosen by its exact text, as
// tokenizer.json and the traces write it; a pattern we do not implement is refused by name.

#include "tokenize/utf8.h"

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mha::tokenizers {

enum class Pattern { gpt2, llama3, qwen2 };  // Qwen 2's is Llama 3's with digits one by one

// One match: bytes [begin, end) of the text, and the branch that matched (a literal of the
// pattern, e.g. "'ll" or " ?\\p{L}+", static storage).
struct PatternPiece {
    std::size_t begin, end;
    const char* branch;
};

// The pattern as written in a tokenizer.json or a paper.
const char* pattern_text(Pattern pattern);

// The pattern whose text is exactly `text`, or nothing.
std::optional<Pattern> pattern_of(std::string_view text);

// The matches in valid UTF-8 text (check_utf8's), in order (the gaps between them, when a
// pattern leaves any, are not pieces).
std::vector<PatternPiece> match_pattern(Pattern pattern, std::string_view text);

// The same matches handed to `take` one at a time, in order, without a vector of them.
void for_each_match(Pattern pattern, std::string_view text,
                    const std::function<void(const PatternPiece&)>& take);

}  // namespace mha::tokenizers
