#pragma once
// Text on its way through a tokenizer.json's normalizer and pre-tokenizer: code points, each
// remembering the bytes of the input it came from, so that every token can say which bytes it
// covers however the normalizer rewrote them; with conversions from and to the stages' texts.

#include "tokenize/tokenizer.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mha::tokenizers {

// Bytes [begin, end) of the input.
struct Span {
    std::size_t begin = 0, end = 0;
};

struct AlignedText {
    std::vector<std::uint32_t> codes;
    std::vector<Span> spans;  // one per code point
};

// The code points of valid UTF-8 (a stage's text; a tokenizer.json's strings).
std::vector<std::uint32_t> code_points(std::string_view text);

// The code points as UTF-8.
std::string utf8_of(const std::vector<std::uint32_t>& codes);

// The bytes that code points [first, end) came from, first to last.
Span span_of(const AlignedText& text, std::size_t first, std::size_t end);

// Code points [first, end) with their spans.
AlignedText slice(const AlignedText& text, std::size_t first, std::size_t end);

// Conversions from and to the stages' texts (which keep one input byte per byte).
AlignedText aligned_from(const NormalizedText& text);
NormalizedText normalized_from(const AlignedText& text);
PreToken pre_token_from(const AlignedText& text, const char* branch);

}  // namespace mha::tokenizers
