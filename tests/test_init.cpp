// Seeded values: our Mersenne Twister against the standard library's, and the block draws
// against the one-at-a-time draws they replace, with the loops of every kernel variant this
// CPU runs (io/mt19937.cpp builds them for each vector width).

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "io/init.h"
#include "io/mt19937.h"
#include "kernel_variants.h"

namespace test_init {

TEST_CASE("Mt19937 gives std::mt19937's draws from the same seed sequence", "[init]") {
    const std::uint32_t seed = GENERATE(0u, 1u, 42u, 0xdeadbeefu);
    EACH_VARIANT();
    std::seed_seq ours_seq{seed, 0u, 1u}, theirs_seq{seed, 0u, 1u};
    mha::Mt19937 ours(ours_seq);
    std::mt19937 theirs(theirs_seq);
    // past three twists of the 624-word state, one draw at a time
    for (int i = 0; i < 2000; ++i) REQUIRE(ours() == theirs());
}

TEST_CASE("Random's block of uniform draws equals the draws one at a time", "[init]") {
    const std::size_t count =
        GENERATE(std::size_t{1}, std::size_t{623}, std::size_t{624}, std::size_t{2000});
    EACH_VARIANT();
    mha::Random one(7, 3), block(7, 3);
    (void)one.uniform();  // start both off a block boundary
    (void)block.uniform();
    std::vector<float> expected(count), got(count);
    for (float& e : expected) e = one.uniform(-0.25f, 0.75f);
    block.uniform(-0.25f, 0.75f, got.data(), count);
    REQUIRE(std::memcmp(expected.data(), got.data(), count * sizeof(float)) == 0);
    REQUIRE(one.uniform() == block.uniform());  // and both are at the same place after it
}

}  // namespace test_init
