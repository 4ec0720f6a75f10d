#pragma once
// The run's memory ledger: --max-memory and what the run already holds, so that each
// read is bounded by what is left rather than by the whole budget.

#include "core/checked.h"
#include "core/error.h"

#include <cstdint>
#include <limits>
#include <string>

namespace mha {

class Ledger {
public:
    static constexpr std::uint64_t unlimited = std::numeric_limits<std::uint64_t>::max();

    // Implicit, so a plain budget (and the tests' unlimited default) is a ledger holding nothing.
    Ledger(std::uint64_t max_memory = unlimited) : limit_(max_memory) {}

    std::uint64_t limit() const { return limit_; }
    std::uint64_t left() const { return held_ < limit_ ? limit_ - held_ : 0; }

    // Bytes the run keeps from here on (a loaded tensor); the plan checks the total later.
    void hold(std::uint64_t bytes) {
        held_ = bytes > unlimited - held_ ? unlimited : held_ + bytes;
    }

    // "--max-memory 1 MiB", or "the 3 KiB left of --max-memory 16 KiB" once something is held.
    std::string describe() const {
        if (held_ == 0) return "--max-memory " + byte_size(limit_);
        return "the " + rounded_down(left()) + " left of --max-memory " + byte_size(limit_);
    }

    // Throws, naming `what` and what it `needs`, when `bytes` do not fit in what is left.
    // `smaller` is the other way out: "a smaller file", "a shorter --text".
    void check(std::uint64_t bytes, const std::string& what, const std::string& needs,
               const char* smaller = "a smaller file") const {
        if (bytes > left()) refuse(what, needs, smaller);
    }

    [[noreturn]] void refuse(const std::string& what, const std::string& needs,
                             const char* smaller = "a smaller file") const {
        throw Error(what + ": " + needs + ", more than " + describe() +
                    "; raise --max-memory or use " + smaller);
    }

private:
    // What is left, never overstated: bytes below 1 MiB, else whole MiB rounded down.
    static std::string rounded_down(std::uint64_t bytes) {
        if (bytes < (std::uint64_t(1) << 20)) return std::to_string(bytes) + " B";
        return std::to_string(bytes >> 20) + " MiB";
    }

    std::uint64_t limit_;
    std::uint64_t held_ = 0;
};

}  // namespace mha
