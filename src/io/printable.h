#pragma once
// Text from outside (argv, file names, file contents, --text) made safe to print: one
// function escapes it for a one-line message, one replaces what a terminal, SVG, HTML or
// JSON cannot take.

#include <cstddef>
#include <string>
#include <string_view>

namespace mha {

// Bytes [at, at + n) of text form one valid UTF-8 character of n bytes; 0 when they do not.
std::size_t utf8_length(std::string_view text, std::size_t at);

// For a message on one line: control bytes as \n, \r, \t or \xNN, and bytes that are not
// valid UTF-8 as \xNN; everything else (valid UTF-8 included) unchanged.
std::string escaped(std::string_view text);

// Control bytes and invalid UTF-8 replaced by U+FFFD, one per byte.
std::string sanitized(std::string_view text);

}  // namespace mha
