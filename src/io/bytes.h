#pragma once
// Little-endian fields and bounds-checked slices of file bytes, shared by the
// .npy and zip readers and writers.

#include "core/error.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace mha::bytes {

// The value of type To made of from's bytes (C++20's std::bit_cast): a float from its bits.
template <typename To, typename From>
To bit_cast(const From& from) {
    static_assert(sizeof(To) == sizeof(From), "bit_cast: the two types differ in size");
    To to;
    std::memcpy(&to, &from, sizeof to);
    return to;
}

inline std::uint64_t load_le(const unsigned char* data, std::size_t width) {
    std::uint64_t value = 0;
    for (std::size_t i = width; i-- > 0;) value = (value << 8) | data[i];
    return value;
}

// A little-endian field of a record whose length the caller has already checked.
inline std::uint64_t field(std::string_view record, std::size_t at, std::size_t width) {
    return load_le(reinterpret_cast<const unsigned char*>(record.data()) + at, width);
}

inline void append_le(std::string& out, std::uint64_t value, std::size_t width) {
    for (std::size_t i = 0; i < width; ++i) out += static_cast<char>((value >> (8 * i)) & 0xFF);
}

// bytes[at, at + length), or an Error saying `problem` when that runs past the end.
inline std::string_view slice(std::string_view bytes, std::uint64_t at, std::uint64_t length,
                              const std::string& problem) {
    if (at > bytes.size() || length > bytes.size() - at) throw Error(problem);
    return bytes.substr(at, length);
}

// Text from a file, safe to put in a one-line message: control characters become '?'.
inline std::string printable(std::string_view text) {
    std::string result(text);
    for (char& c : result) {
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) c = '?';
    }
    return result;
}

}  // namespace mha::bytes
