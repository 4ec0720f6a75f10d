// The Mersenne Twister's seeding and state transition, as [rand.eng.mers] defines them.

#include "io/mt19937.h"

namespace mha {

namespace {

constexpr std::size_t n = Mt19937::state_size, m = 397;
constexpr std::uint32_t upper = 0x80000000u, lower = 0x7fffffffu, matrix = 0x9908b0dfu;

// x_i = x_{i+m} ^ (y >> 1) ^ (a when y is odd), y = upper bit of x_i, lower bits of x_{i+1}.
std::uint32_t next_word(std::uint32_t x_i, std::uint32_t x_next, std::uint32_t x_m) {
    const std::uint32_t y = (x_i & upper) | (x_next & lower);
    return x_m ^ (y >> 1) ^ (-(y & 1u) & matrix);
}

}  // namespace

Mt19937::Mt19937(std::seed_seq& seeds) {
    seeds.generate(state_, state_ + n);
    bool zero = (state_[0] & upper) == 0;
    for (std::size_t i = 1; zero && i < n; ++i) zero = state_[i] == 0;
    if (zero) state_[0] = upper;
}

// Three loops so that each reads words it may read in any order: the first reads x_{i+m}
// not yet replaced, the second x_{i+m-n} replaced n - m words before, the last wraps.
void Mt19937::twist() {
    std::uint32_t* x = state_;
    for (std::size_t i = 0; i < n - m; ++i) x[i] = next_word(x[i], x[i + 1], x[i + m]);
    for (std::size_t i = n - m; i < n - 1; ++i) x[i] = next_word(x[i], x[i + 1], x[i + m - n]);
    x[n - 1] = next_word(x[n - 1], x[0], x[m - 1]);
    next_ = 0;
}

}  // namespace mha
