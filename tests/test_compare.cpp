// One command per seed question: --compare, --head-contributions, the parameters per projection
// and per head, the KV-cache ratio, the step-14 note, bench at several h, the default run's hints.

#include <catch2/catch.hpp>

#include <cmath>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "helpers.h"

namespace test_compare {

namespace {

// The whitespace-separated words of the output line that starts with `start` (after spaces).
std::vector<std::string> row_starting(const std::string& output, const std::string& start) {
    std::istringstream lines(output);
    for (std::string line; std::getline(lines, line);) {
        const std::size_t first = line.find_first_not_of(' ');
        if (first == std::string::npos || line.compare(first, start.size(), start) != 0) continue;
        std::istringstream words(line);
        std::vector<std::string> row;
        for (std::string word; words >> word;) row.push_back(word);
        return row;
    }
    return {};
}

}  // namespace

TEST_CASE("--compare: one seeded layer at each head count, parameters and multiply-adds equal",
          "[cli]") {
    const test::RunResult r = test::run_mha("--compare 1,2,8 -b 1 -n 5 -d 16");
    REQUIRE(r.status == 0);
    // h, d_k, parameters, weights per head, multiply-adds, |output|, entropy, wall ms
    const std::vector<std::string> one = row_starting(r.output, "1    16 ");
    const std::vector<std::string> eight = row_starting(r.output, "8     2 ");
    REQUIRE(one.size() == 8);
    REQUIRE(eight.size() == 8);
    // parameters: 4·16² + 4·16 = 1,088 at every h; per head: d_k·d_model = 16·16 and 2·16
    CHECK(one[2] == "1,088");
    CHECK(eight[2] == "1,088");
    CHECK(one[3] == "256");
    CHECK(eight[3] == "32");
    // multiply-adds: 4·N·d² + 2·N·M·d = 4·5·256 + 2·25·16 = 5,120 + 800 = 5,920 at every h
    CHECK(one[4] == "5,920");
    CHECK(eight[4] == "5,920");
    // entropy between 0 and ln M = ln 5
    for (const auto* row : {&one, &eight}) {
        const double entropy = std::stod((*row)[6]);
        CHECK(entropy >= 0.0);
        CHECK(entropy <= std::log(5.0) + 1e-4);
    }
    CHECK_THAT(r.output, Catch::Contains("The parameters are the same at every h"));
    CHECK_THAT(r.output, Catch::Contains("The multiply-adds are the same too"));
    // the same weights at every h: one head's output differs from eight heads' only by the split
    CHECK(one[5] != eight[5]);
}

TEST_CASE("--head-contributions: the heads' shares sum to the output", "[cli]") {
    const test::RunResult r =
        test::run_mha("--head-contributions -b 1 -n 4 -d 16 -H 4 --random-bias");
    REQUIRE(r.status == 0);
    CHECK_THAT(r.output, Catch::Contains("head 3: columns 12-15, norm "));
    std::smatch difference;
    REQUIRE(std::regex_search(r.output, difference,
                              std::regex("contributions \\+ b_o = output: largest difference "
                                         "([0-9.e+-]+)")));
    CHECK(std::stod(difference[1].str()) < 1e-5);
    // the shares of the four heads add up to 100%
    double shares = 0.0;
    const std::regex share("([0-9.]+)% of the heads' norms");
    for (std::sregex_iterator it(r.output.begin(), r.output.end(), share);
         it != std::sregex_iterator(); ++it)
        shares += std::stod((*it)[1].str());
    CHECK(shares == Approx(100.0).margin(0.3));
}

TEST_CASE(
    "--head-contributions reads the concat's real width: heads wider or narrower than "
    "d_model / h",
    "[cli][head-dim]") {
    // d_model 16, h 4: the concat is h·d_k = 4·32 = 128 or 4·2 = 8 wide, not 16; the heads'
    // columns follow d_k, and their contributions still sum to the output.
    const auto [d_k, last_columns] =
        GENERATE(table<int, std::string>({{32, "head 3: columns 96-127, norm "},
                                          {2, "head 3: columns 6-7, norm "},
                                          {128, "head 3: columns 384-511, norm "}}));
    const std::string form = GENERATE(as<std::string>{}, "", " --per-head", " --fused-qkv");
    const std::string args = "--head-contributions -b 1 -n 4 -d 16 -H 4 --random-bias --head-dim " +
                             std::to_string(d_k) + form;
    CAPTURE(args);
    const test::RunResult r = test::run_mha(args);
    REQUIRE(r.status == 0);
    CHECK_THAT(r.output, Catch::Contains(last_columns));
    std::smatch difference;
    REQUIRE(std::regex_search(r.output, difference,
                              std::regex("contributions \\+ b_o = output: largest difference "
                                         "([0-9.e+-]+)")));
    CHECK(std::stod(difference[1].str()) < 1e-5);
}

TEST_CASE("a form refuses the views it cannot give before printing anything", "[cli]") {
    test::check_rejected("--decode 4 -d 16 --head-contributions",
                         "--decode does not give --head-contributions: ");
    test::check_rejected("--block pre -d 16 --head-contributions",
                         "--block does not give --head-contributions: ");
    test::check_rejected("--model ../examples/models/kjv-2x4.npz --text ab --head-contributions",
                         "--model does not give --head-contributions: ");
}

TEST_CASE("the header counts parameters per projection and per head; step 14 says what W_o does",
          "[cli]") {
    const test::RunResult r = test::run_mha("-d 64 -H 8 --no-bias --trace");
    REQUIRE(r.status == 0);
    // 64·64 = 4,096 per projection; one head's slice of W_q: 8 rows of 64 = 512
    CHECK_THAT(r.output,
               Catch::Contains("per projection: W_q, W_k, W_v, W_o (64, 64) = 4,096 each\n"));
    CHECK_THAT(r.output,
               Catch::Contains("per head: d_k·d_model = 8·64 = 512 of each of W_q, W_k, W_v, W_o"));
    CHECK_THAT(test::flat(r.output),
               Catch::Contains("W_o mixes the heads: head i fills concat's columns"));
    // grouped-query: W_k and W_v have G·d_k = 2·8 = 16 rows
    const test::RunResult gqa = test::run_mha("-d 64 -H 8 -G 2 --trace");
    CHECK_THAT(gqa.output, Catch::Contains("W_k (16, 64) = 1,024"));
    CHECK_THAT(gqa.output,
               Catch::Contains("per head: d_k·d_model = 8·64 = 512 of each of W_q and W_o\n"));
    // the cache shrinks by h/G: 8/2 = 4 for GQA, 8/1 for MQA
    CHECK_THAT(test::flat(gqa.output), Catch::Contains("4x smaller than MHA's (h/G = 8/2)"));
    CHECK_THAT(test::flat(gqa.output), Catch::Contains("8x smaller than MHA's (h/G = 8/1)"));
}

TEST_CASE("the default run ends with commands to try next", "[cli]") {
    const test::RunResult plain = test::run_mha("", false);
    CHECK_THAT(plain.output, Catch::Contains("\nnext:\n  mha --trace "));
    CHECK_THAT(plain.output, Catch::Contains("  mha quiz "));
    CHECK_THAT(test::run_mha("-n 8", false).output, !Catch::Contains("next:"));
}

TEST_CASE("mha bench --sizes and --heads time each size at each head count", "[cli]") {
    const test::RunResult r =
        test::run_mha("bench --sizes 1x8x32x4 --heads 1,2,8 --repeat 1 --threads 2");
    REQUIRE(r.status == 0);
    for (const std::string h : {"1", "2", "8"}) {
        CAPTURE(h);
        CHECK_FALSE(
            row_starting(r.output, "1     8       32" + std::string(4 - h.size(), ' ') + h + " ")
                .empty());
    }
    CHECK_THAT(r.output, Catch::Contains("2 thread(s)"));
}

}  // namespace test_compare
