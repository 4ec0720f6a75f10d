#pragma once
// Size arithmetic that refuses to wrap around (products of user-given sizes), and byte counts
// for messages.

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

inline std::uint64_t checked_sum(std::initializer_list<std::uint64_t> terms, const std::string& what) {
    std::uint64_t sum = 0;
    for (std::uint64_t t : terms) {
        if (sum > std::numeric_limits<std::uint64_t>::max() - t) {
            throw Error(what + " does not fit in 64 bits");
        }
        sum += t;
    }
    return sum;
}

// A byte count for messages, rounded up: "960 B", "2 KiB", "2048 MiB".
inline std::string byte_size(std::uint64_t bytes) {
    const auto round_up = [bytes](int shift) {
        return std::to_string((bytes >> shift) + ((bytes & ((std::uint64_t{1} << shift) - 1)) != 0));
    };
    if (bytes < 1024) return std::to_string(bytes) + " B";
    if (bytes < (std::uint64_t{1} << 20)) return round_up(10) + " KiB";
    return round_up(20) + " MiB";
}

}  // namespace mha
