// UTF-8 checking, message escaping and replacement characters.

#include "io/printable.h"

#include <cstdio>

namespace mha {

namespace {

const char* const replacement = "\xEF\xBF\xBD";  // U+FFFD

bool is_control(unsigned char c) { return c < 0x20 || c == 0x7F; }

bool is_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

}  // namespace

std::size_t utf8_length(std::string_view text, std::size_t at) {
    const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[at + i]); };
    const unsigned char lead = byte(0);
    if (lead < 0x80) return 1;
    std::size_t n = 0;
    unsigned char low = 0x80, high = 0xBF;  // the allowed range of the second byte
    if (lead >= 0xC2 && lead <= 0xDF) n = 2;
    else if (lead == 0xE0) n = 3, low = 0xA0;                 // no overlong forms
    else if (lead == 0xED) n = 3, high = 0x9F;                // no surrogates
    else if (lead >= 0xE1 && lead <= 0xEF) n = 3;
    else if (lead == 0xF0) n = 4, low = 0x90;
    else if (lead == 0xF4) n = 4, high = 0x8F;                // nothing beyond U+10FFFF
    else if (lead >= 0xF1 && lead <= 0xF3) n = 4;
    else return 0;
    if (text.size() - at < n || byte(1) < low || byte(1) > high) return 0;
    for (std::size_t i = 2; i < n; ++i) {
        if (!is_continuation(byte(i))) return 0;
    }
    return n;
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
        if (c == '\n') out += "\\n";
        else if (c == '\r') out += "\\r";
        else if (c == '\t') out += "\\t";
        else {
            char hex[5];
            std::snprintf(hex, sizeof hex, "\\x%02X", c);
            out += hex;
        }
        ++i;
    }
    return out;
}

std::string sanitized(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        const std::size_t n = utf8_length(text, i);
        if (n > 0 && !is_control(static_cast<unsigned char>(text[i]))) {
            out.append(text.substr(i, n));
            i += n;
        } else {
            out += replacement;
            ++i;
        }
    }
    return out;
}

}  // namespace mha
