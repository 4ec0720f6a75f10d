// Looking up a code point's class in the generated ranges, ASCII by a small table first.

#include "tokenize/unicode.h"

#include <algorithm>
#include <array>

namespace mha::unicode {

namespace {

CharClass find_class(const ClassRange* ranges, std::size_t count, std::uint32_t code) {
    const ClassRange* end = ranges + count;
    const ClassRange* after = std::upper_bound(
        ranges, end, code, [](std::uint32_t c, const ClassRange& r) { return c < r.first; });
    if (after == ranges) return CharClass::other;
    const ClassRange& range = *(after - 1);
    return code <= range.last ? range.char_class : CharClass::other;
}

// The classes of U+0000..U+007F, from the same table.
const std::array<CharClass, 128>& ascii_classes() {
    static const std::array<CharClass, 128> table = [] {
        std::array<CharClass, 128> t{};
        for (std::uint32_t c = 0; c < 128; ++c) {
            t[c] = find_class(space_ranges, space_range_count, c) == CharClass::space
                       ? CharClass::space
                       : find_class(class_ranges, class_range_count, c);
        }
        return t;
    }();
    return table;
}

}  // namespace

CharClass general_class(std::uint32_t code) {
    if (code < 128) {
        const CharClass c = ascii_classes()[code];
        return c == CharClass::space ? CharClass::other : c;
    }
    return find_class(class_ranges, class_range_count, code);
}

bool is_letter(std::uint32_t code) { return general_class(code) == CharClass::letter; }
bool is_number(std::uint32_t code) { return general_class(code) == CharClass::number; }
bool is_mark(std::uint32_t code) { return general_class(code) == CharClass::mark; }

bool is_space(std::uint32_t code) {
    if (code < 128) return ascii_classes()[code] == CharClass::space;
    return find_class(space_ranges, space_range_count, code) == CharClass::space;
}

}  // namespace mha::unicode
