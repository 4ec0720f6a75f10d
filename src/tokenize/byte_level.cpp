// GPT-2's byte-to-unicode map and its inverse, built once.

#include "tokenize/byte_level.h"

#include "io/printable.h"

#include <array>

namespace mha::tokenizers {

namespace {

bool stands_for_itself(unsigned b) {
    return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct ByteMap {
    std::array<std::uint32_t, 256> codes{};
    std::array<std::string, 256> symbols;
};

const ByteMap& byte_map() {
    static const ByteMap map = [] {
        ByteMap m;
        std::uint32_t next = 256;
        for (unsigned b = 0; b < 256; ++b) {
            m.codes[b] = stands_for_itself(b) ? b : next++;
            m.symbols[b] = utf8_encode(m.codes[b]);
        }
        return m;
    }();
    return map;
}

}  // namespace

std::uint32_t byte_symbol_code(std::uint8_t b) { return byte_map().codes[b]; }

const std::string& byte_symbol(std::uint8_t b) { return byte_map().symbols[b]; }

const std::array<std::string, 256>& byte_symbols() { return byte_map().symbols; }

int symbol_byte(std::uint32_t code) {
    if (code < 256) return stands_for_itself(code) ? static_cast<int>(code) : -1;
    if (code >= 256 + 68) return -1;
    static const std::array<std::uint8_t, 68> shifted = [] {
        std::array<std::uint8_t, 68> bytes{};
        for (unsigned b = 0; b < 256; ++b) {
            if (!stands_for_itself(b))
                bytes[byte_map().codes[b] - 256] = static_cast<std::uint8_t>(b);
        }
        return bytes;
    }();
    return shifted[code - 256];
}

}  // namespace mha::tokenizers
