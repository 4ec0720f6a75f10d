#pragma once
// The Unicode classes the pre-tokenizer patterns ask for: \p{L}, \p{N}, \p{M} (general
// categories) and \s (the White_Space property), as Unicode 15.0 defines them, from a table
// generated once from Debian's unicode-data package (make_unicode_table.py beside this file).

#include <cstddef>
#include <cstdint>

namespace mha::unicode {

enum class CharClass : std::uint8_t { other, letter, number, mark, space };

// A run of code points [first, last] of one class.
struct ClassRange {
    std::uint32_t first, last;
    CharClass char_class;
};

// The generated table (unicode_table.cpp).
extern const ClassRange class_ranges[];
extern const std::size_t class_range_count;
extern const ClassRange space_ranges[];
extern const std::size_t space_range_count;

// letter, number, mark or other: the general category's first letter (White_Space aside).
CharClass general_class(std::uint32_t code);

bool is_letter(std::uint32_t code);  // \p{L}
bool is_number(std::uint32_t code);  // \p{N}
bool is_mark(std::uint32_t code);    // \p{M}
bool is_space(std::uint32_t code);   // \s: White_Space (U+0085 is one; U+FEFF is not)

}  // namespace mha::unicode
