// UTF-8 checking, message escaping and replacement characters.

#include "io/printable.h"

#include <cstdio>

namespace mha {

namespace {

const char* const replacement = "\xEF\xBF\xBD";  // U+FFFD

bool is_control(unsigned char c) { return c < 0x20 || c == 0x7F; }

bool is_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// A C1 control (U+0080..U+009F) or a bidirectional formatting character, as valid UTF-8.
bool reorders_or_controls(std::string_view character) {
    const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(character[i]); };
    if (character.size() == 2) {
        return (byte(0) == 0xC2 && byte(1) <= 0x9F) || (byte(0) == 0xD8 && byte(1) == 0x9C);
    }
    if (character.size() != 3 || byte(0) != 0xE2) return false;
    const unsigned second = byte(1), third = byte(2);
    return (second == 0x80 && (third == 0x8E || third == 0x8F)) ||  // U+200E, U+200F
           (second == 0x80 && third >= 0xAA && third <= 0xAE) ||    // U+202A..U+202E
           (second == 0x81 && third >= 0xA6 && third <= 0xA9);      // U+2066..U+2069
}

}  // namespace

std::size_t utf8_length(std::string_view text, std::size_t at) {
    const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[at + i]); };
    const unsigned char lead = byte(0);
    if (lead < 0x80) return 1;
    std::size_t n = 0;
    unsigned char low = 0x80, high = 0xBF;  // the allowed range of the second byte
    if (lead >= 0xC2 && lead <= 0xDF)
        n = 2;
    else if (lead == 0xE0)
        n = 3, low = 0xA0;  // no overlong forms
    else if (lead == 0xED)
        n = 3, high = 0x9F;  // no surrogates
    else if (lead >= 0xE1 && lead <= 0xEF)
        n = 3;
    else if (lead == 0xF0)
        n = 4, low = 0x90;
    else if (lead == 0xF4)
        n = 4, high = 0x8F;  // nothing beyond U+10FFFF
    else if (lead >= 0xF1 && lead <= 0xF3)
        n = 4;
    else
        return 0;
    if (text.size() - at < n || byte(1) < low || byte(1) > high) return 0;
    for (std::size_t i = 2; i < n; ++i) {
        if (!is_continuation(byte(i))) return 0;
    }
    return n;
}

std::uint32_t utf8_code_point(std::string_view text, std::size_t at, std::size_t length) {
    const unsigned char first = static_cast<unsigned char>(text[at]);
    std::uint32_t code = length == 1 ? first : first & (0x7F >> length);
    for (std::size_t k = 1; k < length; ++k) {
        code = (code << 6) | (static_cast<unsigned char>(text[at + k]) & 0x3F);
    }
    return code;
}

std::string utf8_encode(std::uint32_t code) {
    if (code < 0x80) return std::string(1, char(code));
    if (code < 0x800) return {char(0xC0 | (code >> 6)), char(0x80 | (code & 0x3F))};
    if (code < 0x10000) {
        return {char(0xE0 | (code >> 12)), char(0x80 | ((code >> 6) & 0x3F)),
                char(0x80 | (code & 0x3F))};
    }
    return {char(0xF0 | (code >> 18)), char(0x80 | ((code >> 12) & 0x3F)),
            char(0x80 | ((code >> 6) & 0x3F)), char(0x80 | (code & 0x3F))};
}

std::string escaped(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        const auto c = static_cast<unsigned char>(text[i]);
        const std::size_t n = utf8_length(text, i);
        if (n > 0 && !is_control(c)) {
            out.append(text.substr(i, n));
            i += n;
            continue;
        }
        if (c == '\n')
            out += "\\n";
        else if (c == '\r')
            out += "\\r";
        else if (c == '\t')
            out += "\\t";
        else {
            char hex[5];
            std::snprintf(hex, sizeof hex, "\\x%02X", c);
            out += hex;
        }
        ++i;
    }
    return out;
}

std::string sanitized(std::string_view text, bool keep_layout) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        const auto c = static_cast<unsigned char>(text[i]);
        const std::size_t n = utf8_length(text, i);
        const bool layout = keep_layout && (c == '\n' || c == '\t');
        const bool shown =
            n > 0 && (layout || !is_control(c)) && !reorders_or_controls(text.substr(i, n));
        if (shown)
            out.append(text.substr(i, n));
        else
            out += replacement;
        i += n > 0 ? n : 1;  // a C1 or bidi character is one U+FFFD, an invalid byte one each
    }
    return out;
}

}  // namespace mha
