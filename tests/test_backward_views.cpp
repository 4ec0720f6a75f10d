// The backward in every view (issue 28 item 8): the lesson page, the Markdown hand-out and the
// JSON document carry the backward's steps and its costs, which add up to what its steps say;
// --shapes-only --backward states the memory training keeps, checked by hand for a preset.

#include <catch2/catch.hpp>

#include <cstdio>
#include <regex>
#include <string>

#include "helpers.h"
#include "xml_checker.h"

namespace test_backward_views {

namespace {

const std::string small = " -b 1 -n 3 -d 8 -H 2 --causal --backward";

std::size_t matches(const std::string& text, const std::string& pattern) {
    const std::regex re(pattern);
    return std::size_t(std::distance(std::sregex_iterator(text.begin(), text.end(), re),
                                     std::sregex_iterator()));
}

// The text trace's step lines: the forward's ("14  project") and the backward's ("b14  grad").
std::size_t traced_steps(const std::string& options, bool backward) {
    const test::RunResult trace = test::run_mha("--trace" + options);
    REQUIRE(trace.status == 0);
    return matches(trace.output, backward ? "\\nb[0-9]+ +[a-z_-]+ " : "\\n ?[0-9]+  [a-z_-]+ ");
}

}  // namespace

TEST_CASE("--format html --backward: a section per step, the kept tensors, the costs",
          "[html][backward]") {
    const std::string path = test::temp_path("backward.html");
    const test::RunResult r = test::run_mha("--format html --output " + path + small);
    REQUIRE(r.status == 0);
    const std::string page = test::read_text(path);
    std::remove(path.c_str());
    CHECK(test::XmlChecker(page).well_formed());
    const std::size_t forward = traced_steps(small, false), backward = traced_steps(small, true);
    CHECK(forward == 19);
    CHECK(backward == 30);
    // K's and V's view and transpose fold into Q's card (steps 4 and 5, and b5 and b4 of the
    // backward), one "also" each
    CHECK(matches(page, "<section class=\"step\"") + matches(page, "<div class=\"also\">") ==
          forward + backward);
    CHECK(matches(page, "<div class=\"also\">") == 8);
    CHECK(matches(page, "<span class=\"number\">b[0-9]+</span>") == backward);
    // x (1, 3, 8), Q, O, concat: 96 B each; K, V (1, 2, 3, 4): 96 B; P (1, 2, 3, 3): 72 B
    CHECK_THAT(page, Catch::Contains("Kept for the backward: x 96 B, Q 96 B, K 96 B, V 96 B, "
                                     "P 72 B, O 96 B, concat 96 B (648 B)."));
    CHECK_THAT(page, Catch::Contains("Backward 2.04x the forward&apos;s multiply-adds: 1,860 vs "
                                     "912."));
    CHECK_THAT(page, Catch::Contains("dP and dS are not drawn"));
}

TEST_CASE("--format markdown --backward: a row per step, b14 to b0 after 0 to 14",
          "[markdown][backward]") {
    const test::RunResult r = test::run_mha("--format markdown" + small);
    REQUIRE(r.status == 0);
    CHECK(matches(r.output, "\\n\\| b[0-9]+ \\| ") == traced_steps(small, true));
    CHECK(r.output.find("| 14 | project |") < r.output.find("| b14 | grad |"));
    CHECK_THAT(r.output, Catch::Contains("\n- dO: seeded standard normal (seed 0)\n- kept for the "
                                         "backward: x 96 B,"));
    CHECK_THAT(r.output, Catch::Contains(" multiply-adds (backward 2.04x the forward's "
                                         "multiply-adds: 1,860 vs 912). Output"));
}

TEST_CASE("--format json --backward: the backward object adds up to its steps",
          "[json][backward]") {
    const std::string options = GENERATE(as<std::string>{}, small, small + " --shapes-only",
                                         " -b 2 -n 3 -m 5 -d 8 -H 4 -G 2 --backward");
    CAPTURE(options);
    const test::RunResult r = test::run_mha("--format json" + options, false);
    REQUIRE(r.status == 0);
    // every step line: its macs, and whether it is the backward's
    const std::regex step("\\n\\{\"step\":[0-9]+(,\"backward\":true)?,.*\"macs\":([0-9]+),");
    std::uint64_t forward = 0, backward = 0;
    std::size_t backward_steps = 0;
    for (auto it = std::sregex_iterator(r.output.begin(), r.output.end(), step);
         it != std::sregex_iterator(); ++it) {
        const bool is_backward = (*it)[1].matched;
        (is_backward ? backward : forward) += std::stoull((*it)[2]);
        backward_steps += is_backward;
    }
    CHECK(backward_steps == traced_steps(options, true));
    CHECK_THAT(r.output, Catch::Contains(",\"forward_macs\":" + std::to_string(forward) +
                                         ",\"backward_macs\":" + std::to_string(backward) + "}"));
    // kept_bytes is the sum of the kept tensors' bytes
    std::smatch kept;
    REQUIRE(std::regex_search(r.output, kept, std::regex("\"kept\":\\[(.*?)\\],\"kept_bytes\":"
                                                         "([0-9]+)")));
    const std::string list = kept[1];
    std::uint64_t sum = 0;
    const std::regex bytes("\"bytes\":([0-9]+)");
    for (auto it = std::sregex_iterator(list.begin(), list.end(), bytes);
         it != std::sregex_iterator(); ++it)
        sum += std::stoull((*it)[1]);
    CHECK(sum == std::stoull(kept[2]));
}

TEST_CASE("--shapes-only --backward --preset llama3-8b: the memory training keeps, by hand",
          "[shapes][backward]") {
    const test::RunResult r = test::run_mha("--shapes-only --backward --preset llama3-8b");
    REQUIRE(r.status == 0);
    // B=1, N=8192, d_model=4096, h=32, G=8, d_k=128. Kept: x, Q, O, concat 8192·4096·4 B =
    // 128 MiB each; K, V 8·8192·128·4 B = 32 MiB each; P 32·8192·8192·4 B = 8 GiB:
    // 8192 + 4·128 + 2·32 = 8768 MiB = 8.5625 GiB, shown rounded up as 8.6 GiB.
    // Streaming keeps lse 32·8192·4 B = 1 MiB instead of P.
    CHECK_THAT(test::flat(r.output),
               Catch::Contains("Training this layer at N = 8,192 keeps 8.6 GiB of activations for "
                               "the backward (P 8 GiB: --attention streaming keeps 1 MiB of row "
                               "log-sum-exp instead)."));
    CHECK_THAT(test::flat(r.output),
               Catch::Contains("kept for the backward: x 128 MiB, Q 128 MiB, K 32 MiB, V 32 MiB, "
                               "P 8 GiB, O 128 MiB, concat 128 MiB (8.6 GiB)"));
    // the backward's multiply-adds: 2.00x the forward's, as the plan adds them
    CHECK_THAT(test::flat(r.output), Catch::Contains("Backward 2.00x the forward's multiply-adds"));
}

}  // namespace test_backward_views
