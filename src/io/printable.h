#pragma once
// Text from outside (argv, file names, file contents, --text) made safe to print: one
// function escapes it for a one-line message, one replaces what a terminal, SVG, HTML or
// JSON cannot take.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace mha {

// Bytes [at, at + n) of text form one valid UTF-8 character of n bytes; 0 when they do not.
std::size_t utf8_length(std::string_view text, std::size_t at);

// The code point of the valid UTF-8 character of `length` bytes (utf8_length's) at text[at].
std::uint32_t utf8_code_point(std::string_view text, std::size_t at, std::size_t length);

// The UTF-8 bytes of a code point (≤ 0x10FFFF).
std::string utf8_encode(std::uint32_t code);

// For a message on one line: control bytes as \n, \r, \t or \xNN, and bytes that are not
// valid UTF-8 as \xNN; everything else (valid UTF-8 included) unchanged.
std::string escaped(std::string_view text);

// The terminal's sanitiser: control bytes and invalid UTF-8 replaced by U+FFFD, one per
// byte, and the C1 controls (U+0080..U+009F) and the bidirectional formatting characters
// (U+061C, U+200E, U+200F, U+202A..U+202E, U+2066..U+2069), which could reorder or restyle
// what is shown around them, by one U+FFFD each. keep_layout keeps newlines and tabs (a block of
// lines); anything else is for one line.
std::string sanitized(std::string_view text, bool keep_layout = false);

}  // namespace mha
