// Wording a learner trips on (issue 48, item 6): what the binary prints, checked line by line.

#include <catch2/catch.hpp>
#include <cctype>

#include "helpers.h"

namespace test_wording {

namespace {

// Every line of `text`.
std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

}  // namespace

TEST_CASE("the summary keeps '/ sqrt(d_k)' on one line", "[wording]") {
    for (const std::string& extra : {std::string(""), std::string(" --scale-base 50")}) {
        const test::RunResult r = test::run_mha("--summary" + extra);
        REQUIRE(r.status == 0);
        CHECK_THAT(r.output,
                   Catch::Contains(extra.empty() ? "after / sqrt(d_k)" : "after / sqrt(S)"));
        for (const std::string& line : lines_of(r.output)) {
            CAPTURE(line);
            CHECK_FALSE((!line.empty() && line.back() == '/'));
        }
    }
}

TEST_CASE("--fused-qkv's header names W_qkv, not three projections", "[wording]") {
    const test::RunResult r = test::run_mha("--fused-qkv");
    REQUIRE(r.status == 0);
    CHECK_THAT(r.output,
               Catch::Contains("\n  per projection: W_qkv (768, 256) = 196,608, W_o (256, "
                               "256) = 65,536 (+ bias)\n  per head: d_k·d_model = "
                               "64·256 = 16,384 of each third of W_qkv and of W_o\n"));
}

TEST_CASE("byte counts and weight counts in the trace's notes carry thousands separators",
          "[wording]") {
    const test::RunResult r = test::run_mha("--kv-heads 2 --trace");
    REQUIRE(r.status == 0);
    CHECK_THAT(test::flat(r.output), Catch::Contains("the scores are stored, 2,048 bytes") &&
                                         Catch::Contains("MHA G=4: 262,144 weights") &&
                                         Catch::Contains("196,608 weights"));
    const test::RunResult window = test::run_mha("--window 3 --decode 6 --trace");
    REQUIRE(window.status == 0);
    // no "1024 bytes": the number before each " bytes" has a separator once it has 4 digits
    // (checked by hand: std::regex's ".*" recurses once a character, past the stack of an
    // ASan build on a trace this long)
    const std::string text = test::flat(window.output);
    for (std::size_t at = text.find(" bytes"); at != std::string::npos;
         at = text.find(" bytes", at + 1)) {
        std::size_t digits = 0;
        while (digits < at && std::isdigit(static_cast<unsigned char>(text[at - 1 - digits])))
            ++digits;
        CAPTURE(text.substr(at - std::min<std::size_t>(at, 20), 26));
        CHECK(digits < 4);
    }
}

TEST_CASE("the terminal heatmap's row labels keep their tokens in one column", "[wording]") {
    const test::RunResult r =
        test::run_mha("--text 'a b c d e f g h i j k l' --heatmap --color never --head 0");
    REQUIRE(r.status == 0);
    CHECK_THAT(r.output, Catch::Contains("\n 9 j ") && Catch::Contains("\n10 k ") &&
                             Catch::Contains("\n 0 a "));
}

TEST_CASE("the HTML page's key legend names every key its script takes", "[wording]") {
    const std::string page = test::temp_path("keys.html");
    REQUIRE(test::run_mha("--format html --output " + page).status == 0);
    const std::string html = test::read_text(page);
    std::remove(page.c_str());
    // the script's keys: ArrowRight, ArrowDown, j, ' ', ArrowLeft, ArrowUp, k, Home, End
    CHECK_THAT(html, Catch::Contains("Keys: &#8594;, &#8595;, Space or j next step; &#8592;, "
                                     "&#8593; or k the one before; Home and End"));
}

TEST_CASE("mha train's closing lines fit 120 columns and count with separators", "[wording]") {
    const std::string model = test::temp_path("closing.npz");
    // a small model: the closing lines' words do not depend on its sizes
    const std::string small = "train --batch 4 --context 32 ";
    const test::RunResult done = test::run_mha(small + "--steps 1 --out " + model);
    REQUIRE(done.status == 0);
    CHECK_THAT(done.output,
               Catch::Contains("mha: trained 1 step in ") &&
                   Catch::Contains("; the model is in " + model + "\n  its heads: mha --model " +
                                   model + " --text \"...\" --summary\n"));
    for (const std::string& line : lines_of(done.output)) CHECK(line.size() <= 120);
    const test::RunResult stopped =
        test::run_mha(small + "--steps 1000 --time-limit 0.05 --out " + model);
    std::remove(model.c_str());
    CHECK_THAT(stopped.output, Catch::Contains(" of 1,000; the checkpoint is in "));
}

TEST_CASE("the block's parameter notes carry thousands separators", "[wording]") {
    const test::RunResult r = test::run_mha("--block pre --trace");
    REQUIRE(r.status == 0);
    CHECK_THAT(r.output, Catch::Contains("parameters: W_1 (d_ff, d_model) and b_1, 263,168") &&
                             Catch::Contains("parameters: W_2 (d_model, d_ff) and b_2, 262,400"));
}

// The backward's steps are numbered as the forward's, read in reverse: b14 down to b0, never
// back up (it once went b5 b4 b5 b4 b5 b4 b1 b2 b3), in every form and with cross-attention.
TEST_CASE("the backward's step numbers only count down", "[wording][backward]") {
    for (const char* form :
         {"", " --per-head", " --fused-qkv", " --kv-heads 1 -m 5", " --attention streaming"}) {
        const test::RunResult r =
            test::run_mha(std::string("--backward --shapes-only --trace -b 1 -n 3 -d 8 -H 2") + form);
        REQUIRE(r.status == 0);
        int last = 15, shown = 0;
        for (const std::string& line : lines_of(r.output)) {
            std::size_t at = line.find_first_not_of(' ');
            if (at == std::string::npos || line[at] != 'b' || at + 1 >= line.size() ||
                !std::isdigit(static_cast<unsigned char>(line[at + 1])))
                continue;
            const int number = std::stoi(line.substr(at + 1));
            CAPTURE(form, line);
            CHECK(number <= last);
            last = number;
            ++shown;
        }
        CHECK(shown >= 20);
        CHECK(last <= 1);  // b0 sums x's three paths; cross-attention and fused QKV end on b1
    }
}

}  // namespace test_wording
