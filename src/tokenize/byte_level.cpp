// GPT-2's byte-to-unicode map and its inverse, built once.

#include "tokenize/byte_level.h"

#include "io/printable.h"

#include <array>

namespace mha::tokenizers {

namespace {

bool stands_for_itself(unsigned b) {
    return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

// A symbol's UTF-8 where a loop can copy it without a string: every one is one or two bytes
// (the codes stay below U+0800).
struct PackedSymbol {
    char bytes[2];
    std::uint8_t size;
};

struct ByteMap {
    std::array<std::uint32_t, 256> codes{};
    std::array<std::string, 256> symbols;
    std::array<PackedSymbol, 256> packed{};
};

const ByteMap& byte_map() {
    static const ByteMap map = [] {
        ByteMap m;
        std::uint32_t next = 256;
        for (unsigned b = 0; b < 256; ++b) {
            m.codes[b] = stands_for_itself(b) ? b : next++;
            m.symbols[b] = utf8_encode(m.codes[b]);
            m.packed[b].size = static_cast<std::uint8_t>(m.symbols[b].size());
            m.symbols[b].copy(m.packed[b].bytes, m.symbols[b].size());
        }
        return m;
    }();
    return map;
}

}  // namespace

std::uint32_t byte_symbol_code(std::uint8_t b) { return byte_map().codes[b]; }

const std::string& byte_symbol(std::uint8_t b) { return byte_map().symbols[b]; }

void append_byte_symbols(std::string& out, std::string_view bytes) {
    const std::array<PackedSymbol, 256>& packed = byte_map().packed;
    const std::size_t start = out.size();
    out.resize(start + 2 * bytes.size());  // room for two bytes each, cut to what they take
    char* at = &out[start];
    for (const char b : bytes) {
        const PackedSymbol& symbol = packed[static_cast<std::uint8_t>(b)];
        at[0] = symbol.bytes[0];
        at[1] = symbol.bytes[1];
        at += symbol.size;
    }
    out.resize(static_cast<std::size_t>(at - out.data()));
}

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
