// The Mersenne Twister's seeding and state transition, as [rand.eng.mers] defines them, and
// its block of uniform floats. The two loops over a block are built for AVX-512, AVX2 and
// baseline, and the kernel variant in use (core/kernels/kernels.h: the CPU's best, or MHA_KERNEL)
// picks one; not target_clones, whose load-time resolver runs before ThreadSanitizer is set up.
// Integer operations and one rounding multiply and add per float: every build gives the same bits.

#include "io/mt19937.h"

#include <algorithm>

#include "core/kernels/variant_builds.h"

namespace mha {

namespace {

constexpr std::size_t mt_n = Mt19937::state_size, mt_m = 397;  // the standard's n and m
constexpr std::uint32_t upper = 0x80000000u, lower = 0x7fffffffu, matrix = 0x9908b0dfu;

// x_i = x_{i+m} ^ (y >> 1) ^ (a when y is odd), y = upper bit of x_i, lower bits of x_{i+1}.
inline std::uint32_t next_word(std::uint32_t x_i, std::uint32_t x_next, std::uint32_t x_m) {
    const std::uint32_t y = (x_i & upper) | (x_next & lower);
    return x_m ^ (y >> 1) ^ (-(y & 1u) & matrix);
}

// Three loops so that each reads words it may read in any order: the first reads x_{i+m}
// not yet replaced, the second x_{i+m-n} replaced n - m words before, the last wraps.
[[gnu::always_inline]] inline void twist_words(std::uint32_t* x) {
    for (std::size_t i = 0; i < mt_n - mt_m; ++i) x[i] = next_word(x[i], x[i + 1], x[i + mt_m]);
    for (std::size_t i = mt_n - mt_m; i < mt_n - 1; ++i)
        x[i] = next_word(x[i], x[i + 1], x[i + mt_m - mt_n]);
    x[mt_n - 1] = next_word(x[mt_n - 1], x[0], x[mt_m - 1]);
}

// out[i] = low + width · (top 24 bits of tempered words[i]) / 2^24; the value is below 2^24,
// so its conversion to float is exact.
[[gnu::always_inline]] inline void uniform_block(const std::uint32_t* words, std::size_t count,
                                                 float low, float width, float* out) {
    for (std::size_t i = 0; i < count; ++i) {
        const std::int32_t top = std::int32_t(Mt19937::temper(words[i]) >> 8);
        out[i] = low + width * (float(top) * (1.0f / 16777216.0f));
    }
}

#define MHA_MT_VARIANT(suffix, attribute)                                                     \
    attribute void twist_##suffix(std::uint32_t* x) { twist_words(x); }                       \
    attribute void uniform_##suffix(const std::uint32_t* words, std::size_t count, float low, \
                                    float width, float* out) {                                \
        uniform_block(words, count, low, width, out);                                         \
    }

MHA_FOR_EACH_VARIANT(MHA_MT_VARIANT)

struct Loops {
    void (*twist)(std::uint32_t*);
    void (*uniform)(const std::uint32_t*, std::size_t, float, float, float*);
};

Loops loops() {
    return for_kernels_in_use<Loops>({twist_baseline, uniform_baseline},
                                     {twist_avx2, uniform_avx2}, {twist_avx512, uniform_avx512});
}

}  // namespace

Mt19937::Mt19937(std::seed_seq& seeds) {
    seeds.generate(state_, state_ + mt_n);
    bool zero = (state_[0] & upper) == 0;
    for (std::size_t i = 1; zero && i < mt_n; ++i) zero = state_[i] == 0;
    if (zero) state_[0] = upper;
}

void Mt19937::twist() {
    loops().twist(state_);
    next_ = 0;
}

void Mt19937::uniform_floats(float low, float width, float* out, std::size_t count) {
    while (count > 0) {
        if (next_ == mt_n) twist();
        const std::size_t take = std::min(count, mt_n - next_);
        loops().uniform(state_ + next_, take, low, width, out);
        next_ += take;
        out += take;
        count -= take;
    }
}

}  // namespace mha
