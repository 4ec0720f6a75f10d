#pragma once
// The text the tokenizers take: valid UTF-8 only, as Hugging Face's tokenizers take Rust
// strings. Invalid bytes are refused with their offset rather than replaced, so that ids
// never stand for text that was not given.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace mha::tokenizers {

// Throws mha::Error "WHAT: byte N is not valid UTF-8 (0xNN); ..." at the first bad byte.
void check_utf8(std::string_view text, const std::string& what);

// The code point starting at text[at] of valid UTF-8 text (check_utf8's), and its length.
struct CodePoint {
    std::uint32_t code;
    std::size_t length;
};
CodePoint code_point_at(std::string_view text, std::size_t at);

}  // namespace mha::tokenizers
