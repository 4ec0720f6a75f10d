#pragma once
// The Mersenne Twister of the C++ standard (std::mt19937, [rand.eng.mers]) written out, so
// that a block of draws runs as vector code: the same bits as std::mt19937 from the same seed
// sequence, about a tenth of the instructions per draw of libstdc++'s engine.

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

    // out[i] = low + width · (the next draw's top 24 bits / 2^24) for i < count: what that
    // formula gives on the draws of operator() one by one, a whole state block at a time.
    void uniform_floats(float low, float width, float* out, std::size_t count);

    static std::uint32_t temper(std::uint32_t y) {
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c5680u;
        y ^= (y << 15) & 0xefc60000u;
        return y ^ (y >> 18);
    }

private:
    void twist();  // the next n words of state

    std::uint32_t state_[state_size];
    std::size_t next_ = state_size;
};

}  // namespace mha
