#pragma once
// GPT-2's byte-to-unicode map: each of the 256 byte values stands for one printable
// character, so that byte-level tokens are strings of visible symbols. The bytes that are
// printable Latin-1 ('!'..'~', '¡'..'¬', '®'..'ÿ') stand for themselves; the other 68
// (controls, space, U+00AD) take U+0100 onwards in byte order, so a space is 'Ġ' (U+0120)
// and a newline 'Ċ' (U+010A).

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace mha::tokenizers {

// The code point byte b stands for.
std::uint32_t byte_symbol_code(std::uint8_t b);

// Its UTF-8.
const std::string& byte_symbol(std::uint8_t b);

// The symbols of `bytes`, appended to out: a pre-tokenizer's piece in one pass.
void append_byte_symbols(std::string& out, std::string_view bytes);

// The byte a symbol stands for, or -1 when the code point is none of the 256 symbols.
int symbol_byte(std::uint32_t code);

}  // namespace mha::tokenizers
