#pragma once
// Size arithmetic that refuses to wrap around (products of user-given sizes), and the
// one byte formatter.

#include "core/error.h"

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>

namespace mha {

// The product of the factors; throws mha::Error naming `what` if it exceeds 64 bits.
inline std::uint64_t checked_product(std::initializer_list<std::uint64_t> factors,
                                     const std::string& what) {
    std::uint64_t product = 1;
    for (std::uint64_t f : factors) {
        if (f != 0 && product > std::numeric_limits<std::uint64_t>::max() / f) {
            throw Error(what + " does not fit in 64 bits");
        }
        product *= f;
    }
    return product;
}

inline std::uint64_t checked_sum(std::initializer_list<std::uint64_t> terms,
                                 const std::string& what) {
    std::uint64_t sum = 0;
    for (std::uint64_t t : terms) {
        if (sum > std::numeric_limits<std::uint64_t>::max() - t) {
            throw Error(what + " does not fit in 64 bits");
        }
        sum += t;
    }
    return sum;
}

// The project's one byte formatter, for messages and traces alike: exact below 1 KiB,
// otherwise KiB, MiB, GiB, TiB, PiB or EiB with one decimal, rounded up (a size is never
// shown below what it is) and ".0" dropped: "960 B", "16 KiB", "1.5 MiB", "2.1 GiB".
inline std::string byte_size(std::uint64_t bytes) {
    if (bytes < 1024) return std::to_string(bytes) + " B";
    const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    std::size_t unit = 0;
    std::uint64_t scale = 1024;
    while (unit + 1 < sizeof units / sizeof units[0] && bytes / scale >= 1024) {
        scale *= 1024;
        ++unit;
    }
    std::uint64_t whole = bytes / scale;
    std::uint64_t tenths = (bytes % scale * 10 + scale - 1) / scale;  // < 11·2^60: no overflow
    if (tenths == 10) {
        ++whole;
        tenths = 0;
    }
    if (whole == 1024 && unit + 1 < sizeof units / sizeof units[0]) {
        whole = 1;
        ++unit;
    }
    return std::to_string(whole) + (tenths ? "." + std::to_string(tenths) : "") + " " + units[unit];
}

}  // namespace mha
