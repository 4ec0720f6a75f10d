// The paged KV cache (--kv-block-size, --kv-pool-seed): its block arithmetic by hand, its
// seeded pool order, the same bits as the contiguous cache in every cached form, the trace
// and the refusals.

#include <catch2/catch.hpp>
#include <algorithm>
#include <random>
#include <utility>

#include "app/run/kv_pool.h"
#include "core/forms/decode.h"
#include "core/forms/paged_kv.h"
#include "core/forms/prefill.h"
#include "helpers.h"
#include "io/init.h"

namespace test_paged_kv {

namespace {

mha::Sizes cache_sizes(std::size_t B, std::size_t T, std::size_t E, std::size_t h,
                       std::size_t G) {
    return {B, T, T, E, E, E, h, G, E / h};
}

// Fisher-Yates as kv_pool.h states it, on the standard library's own std::mt19937.
std::vector<std::size_t> standard_shuffle(std::size_t blocks, std::uint64_t seed) {
    std::vector<std::size_t> order(blocks);
    for (std::size_t i = 0; i < blocks; ++i) order[i] = i;
    std::seed_seq sequence{std::uint32_t(seed), std::uint32_t(seed >> 32)};
    std::mt19937 engine(sequence);
    for (std::size_t i = blocks - 1; i > 0; --i) {
        const std::uint64_t n = i + 1, limit = (std::uint64_t(1) << 32) - (std::uint64_t(1) << 32) % n;
        std::uint64_t draw = engine();
        while (draw >= limit) draw = engine();
        std::swap(order[i], order[draw % n]);
    }
    return order;
}

}  // namespace

TEST_CASE("a position's block and slot, worked by hand", "[paged]") {
    CHECK(mha::blocks_for(9, 4) == 3);   // positions 0-3, 4-7, 8
    CHECK(mha::blocks_for(8, 4) == 2);
    CHECK(mha::blocks_for(3, 16) == 1);  // a block larger than the context: one, partly filled
    // B = 2 sequences of T = 12 positions in blocks of S = 4: 3 blocks each, 6 in the pool
    mha::KvPaging paging{4, {0, 1, 2, 3, 4, 5}};
    const mha::KvCache in_order(cache_sizes(2, 12, 8, 2, 1), &paging, nullptr);
    // t = 9: entry 9 // 4 = 2 of the table, slot 9 % 4 = 1; sequence 1's table starts at 3
    const mha::PagedPosition at = in_order.place(0, 9);
    CHECK((at.entry == 2 && at.block == 2 && at.slot == 1));
    CHECK(in_order.place(1, 9).block == 5);
    paging.pool_order = {4, 0, 5, 2, 1, 3};  // sequence 0: [4, 0, 5], sequence 1: [2, 1, 3]
    const mha::KvCache shuffled(cache_sizes(2, 12, 8, 2, 1), &paging, nullptr);
    CHECK(shuffled.place(0, 9).block == 5);
    CHECK(shuffled.place(1, 9).block == 3);
    CHECK(shuffled.place(1, 3).block == 2);  // t = 3: entry 0, slot 3
    CHECK(shuffled.place(1, 3).slot == 3);

    paging.pool_order = {4, 0, 5, 2, 1};
    REQUIRE_THROWS_WITH(mha::KvCache(cache_sizes(2, 12, 8, 2, 1), &paging, nullptr),
                        "a paged KV cache of 2 sequences of 3 blocks needs a pool order of 6 "
                        "blocks, not 5");
    paging.pool_order = {4, 0, 5, 2, 4, 3};
    REQUIRE_THROWS_WITH(mha::KvCache(cache_sizes(2, 12, 8, 2, 1), &paging, nullptr),
                        "a paged KV cache's pool order must name each of its 6 blocks once; "
                        "block 4 is out of range or named twice");
    paging = {0, {}};
    REQUIRE_THROWS_WITH(mha::KvCache(cache_sizes(2, 12, 8, 2, 1), &paging, nullptr),
                        "a paged KV cache needs blocks of at least 1 position, not 0");
}

TEST_CASE("the pool's order is a seeded permutation", "[paged]") {
    CHECK(mha::pool_order(5, std::nullopt) == std::vector<std::size_t>{0, 1, 2, 3, 4});
    CHECK(mha::pool_order(1, 9) == std::vector<std::size_t>{0});
    // our vectorised engine draws std::mt19937's numbers
    for (std::uint64_t seed : {0ull, 1ull, 42ull, 1ull << 40})
        CHECK(mha::pool_order(37, seed) == standard_shuffle(37, seed));
    std::vector<std::size_t> order = mha::pool_order(6, 3);
    CHECK(order == std::vector<std::size_t>{5, 0, 2, 1, 4, 3});  // seed 3, fixed once
    std::sort(order.begin(), order.end());
    CHECK(order == mha::pool_order(6, std::nullopt));
}

TEST_CASE("a paged cache gives the contiguous cache's bits", "[paged]") {
    const auto [T, h, G, S] = GENERATE(table<std::size_t, std::size_t, std::size_t, std::size_t>(
        {{9, 4, 4, 4}, {9, 4, 2, 1}, {13, 4, 1, 5}, {7, 4, 2, 16}, {300, 4, 2, 16}}));
    const std::size_t threads = GENERATE(1, 2, 3);
    const bool streamed = GENERATE(false, true);
    const bool shuffled = GENERATE(false, true);
    CAPTURE(T, h, G, S, threads, streamed, shuffled);
    const std::size_t B = 3, E = 32;
    const mha::Weights w = mha::seeded_weights(E, G * (E / h), true, true, 7);
    const mha::Inputs in = mha::seeded_inputs(cache_sizes(B, T, E, h, G), true, 7);
    mha::ForwardOptions options;
    options.heads = h;
    options.threads = threads;
    if (streamed) options.path = mha::AttentionPath::Streaming;
    const std::size_t blocks = B * mha::blocks_for(T, S);
    const mha::KvPaging paging{S, mha::pool_order(blocks, shuffled ? std::optional<std::uint64_t>(11)
                                                                   : std::nullopt)};
    mha::NullTracer none;
    SECTION("decoding") {
        const mha::ForwardResult plain = mha::decode(w, in, {}, options, none);
        const mha::ForwardResult paged = mha::decode(w, in, {}, options, none, &paging);
        CHECK(test::same_bits(paged.output.to_vector(), plain.output.to_vector()));
        CHECK(test::same_bits(paged.weights.to_vector(), plain.weights.to_vector()));
    }
    SECTION("chunked prefill") {
        mha::Masks causal;
        causal.causal = true;
        const std::vector<std::size_t> chunks = {T / 2, 1, T - T / 2 - 1};
        const mha::ForwardResult plain = mha::prefill(w, in, causal, options, chunks, none);
        const mha::ForwardResult paged = mha::prefill(w, in, causal, options, chunks, none, &paging);
        CHECK(test::same_bits(paged.output.to_vector(), plain.output.to_vector()));
        CHECK(test::same_bits(paged.weights.to_vector(), plain.weights.to_vector()));
    }
}

TEST_CASE("a thread's gathered rows are never read for another run's", "[paged]") {
    // the query heads of a group share their gathered rows; two runs of the same sizes, one
    // after the other, may get their pool at the same address: the second reads its own rows
    const std::size_t B = 1, T = 6, E = 16, h = 4, G = 1;
    const mha::KvPaging paging{2, {2, 0, 1}};
    mha::ForwardOptions options;
    options.heads = h;
    mha::NullTracer none;
    for (std::uint32_t seed : {1u, 2u, 3u}) {
        CAPTURE(seed);
        const mha::Weights w = mha::seeded_weights(E, G * (E / h), true, true, seed);
        const mha::Inputs in = mha::seeded_inputs(cache_sizes(B, T, E, h, G), true, seed);
        const mha::ForwardResult paged = mha::decode(w, in, {}, options, none, &paging);
        const mha::ForwardResult plain = mha::decode(w, in, {}, options, none);
        CHECK(test::same_bits(paged.output.to_vector(), plain.output.to_vector()));
    }
}

TEST_CASE("paged runs save the contiguous runs' arrays byte for byte", "[paged]") {
    const auto [form, kv_heads] = GENERATE(table<std::string, std::string>({
        {"--decode 11", "-G 4"},              // MHA
        {"--decode 11", "-G 2"},              // GQA
        {"--decode 11 --rope half", "-G 1"},  // MQA
        {"--prefill-chunks 5,1,5", "-G 2"},
        {"--prefill-chunks 6,5 --window 4", "-G 1"},
    }));
    const std::string threads = GENERATE("1", "2", "3");
    const std::string args = "-b 2 -d 16 -H 4 " + kv_heads + " " + form + " --threads " + threads;
    const std::string plain = test::saved_bytes(args);
    for (const char* paging :
         {" --kv-block-size 4", " --kv-block-size 3 --kv-pool-seed 5", " --kv-block-size 64",
          " --kv-block-size 1 --kv-pool-seed 2"}) {
        CAPTURE(paging);
        CHECK(test::saved_bytes(args + paging) == plain);
    }
}

TEST_CASE("the trace shows the block table, a position's block and slot, and the unused bytes",
          "[paged]") {
    // B = 2, T = 10, S = 4: 3 blocks each, 6 in the pool; seed 3 orders them 5 0 2 1 4 3, so
    // sequence 0's table is [5, 0, 2]. At t = 9 (the last token): entry 9 // 4 = 2 holds
    // block 2, slot 9 % 4 = 1; the last block holds 2 of its 4 slots, and 2 slots of K and V
    // (G = 1, d_k = 4) in 2 sequences are 2·2·1·2·4·4 = 128 unused bytes.
    const test::RunResult r =
        test::run_mha("-b 2 -d 8 -H 2 -G 1 --decode 10 --kv-block-size 4 --kv-pool-seed 3 --trace");
    REQUIRE(r.status == 0);
    const std::string text = test::flat(r.output);
    CHECK_THAT(text, Catch::Contains("K_pool[block_table[:, 9 // 4], :, 9 % 4] = x_t @ W_k.T") &&
                         Catch::Contains("(blocks=6, G=1, S=4, d_k=4)") &&
                         Catch::Contains("position t = 9 of sequence 0: block_table[t // S] = "
                                         "block_table[9 // 4] = block_table[2] = 2, slot t % S = "
                                         "9 % 4 = 1") &&
                         Catch::Contains("block_table[0] = [5, 0, 2]") &&
                         Catch::Contains("unused 128 B") &&
                         Catch::Contains("shuffled by"));
    const test::RunResult chunked = test::run_mha(
        "-b 1 -d 8 -H 2 --prefill-chunks 3,5 --kv-block-size 4 --trace");
    REQUIRE(chunked.status == 0);
    CHECK_THAT(test::flat(chunked.output),
               Catch::Contains("K_pool[block_table[:, t // 4], :, t % 4] for t in 3:8") &&
                   Catch::Contains("block_table[0] = [0, 1]") && Catch::Contains("in order"));
    const test::RunResult dry =
        test::run_mha("-b 2 -d 8 -H 2 --decode 10 --kv-block-size 4 --shapes-only");
    REQUIRE(dry.status == 0);
    CHECK_THAT(dry.output, Catch::Contains("(blocks=6, h=2, S=4, d_k=4)"));
}

TEST_CASE("paging options that make no sense are one-line errors", "[paged]") {
    const auto [args, message] = GENERATE(table<std::string, std::string>({
        {"--decode 4 --kv-block-size 0", "--kv-block-size must be at least 1, got 0"},
        {"-n 4 --causal --kv-block-size 4",
         "--kv-block-size pages the KV cache, and only --decode T or --prefill-chunks keep one"},
        {"--decode 4 --kv-pool-seed 1", "--kv-pool-seed shuffles the blocks of a paged KV cache"},
        {"-n 4 --kv-pool-seed 1 --kv-block-size 2", "only --decode T or --prefill-chunks"},
        {"--decode 4 --kv-block-size 4294967297", "--kv-block-size must be at most 4294967296"},
        {"--decode 4 -d 1024 -H 16 --kv-block-size 4294967295", "more than --max-memory"},
    }));
    test::check_rejected(args, message);
}

}  // namespace test_paged_kv
