// Checking and decoding the UTF-8 a tokenizer is given.

#include "tokenize/utf8.h"

#include "core/error.h"
#include "io/printable.h"

#include <cstdio>

namespace mha::tokenizers {

void check_utf8(std::string_view text, const std::string& what) {
    for (std::size_t at = 0; at < text.size();) {
        const std::size_t length =
            static_cast<unsigned char>(text[at]) < 0x80 ? 1 : utf8_length(text, at);
        if (length == 0) {
            char hex[8];
            std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(text[at]));
            throw Error(what + ": byte " + std::to_string(at) + " is not valid UTF-8 (" + hex +
                        "); tokenizers take valid UTF-8 only, as Hugging Face's do");
        }
        at += length;
    }
}

CodePoint code_point_at(std::string_view text, std::size_t at) {
    const auto lead = static_cast<unsigned char>(text[at]);
    if (lead < 0x80) return {lead, 1};
    std::size_t length = utf8_length(text, at);
    if (length == 0) return {0xFFFD, 1};  // not reached for checked text; never stall
    return {utf8_code_point(text, at, length), length};
}

}  // namespace mha::tokenizers
