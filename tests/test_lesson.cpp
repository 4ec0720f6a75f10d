// The lesson material: --explain's paragraphs (trace, Markdown), the Markdown hand-out's mask
// grid, and the --format html page (well-formed, every step, no network, its script, its
// heatmaps; written whole or not at all).

#include <catch2/catch.hpp>

#include <cctype>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "app/cli/cli.h"
#include "app/run/problem.h"
#include "core/tensor/workspace.h"
#include "helpers.h"
#include "show/explain.h"
#include "xml_checker.h"

namespace test_lesson {

using namespace mha;

namespace {

std::size_t count_of(const std::string& text, const std::string& piece) {
    std::size_t n = 0;
    for (std::size_t at = text.find(piece); at != std::string::npos; at = text.find(piece, at + 1))
        ++n;
    return n;
}

std::vector<std::string> words_of_options(const std::string& options) {
    std::istringstream in(options);
    std::vector<std::string> words;
    for (std::string word; in >> word;) words.push_back(word);
    return words;
}

}  // namespace

TEST_CASE("--explain has a paragraph for every kind of step of every form", "[explain]") {
    const std::string options =
        GENERATE(as<std::string>{}, "", " --per-head", " --decode 3", " --fused-qkv",
                 " --rope half --qk-norm", " --window 2", " --attention streaming");
    CAPTURE(options);
    const Config config = parse_args(words_of_options("--shapes-only -d 16 -H 2" + options));
    struct Explained : Tracer {  // every step of the dry run has its paragraph
        void on_step(const Step& step) override {
            INFO("step " << step.number << " " << step.name << " " << step.tensor);
            CHECK(explanation(step).size() > 100);
        }
    } explained;
    Problem dry = build_shapes(config);
    Workspace workspace = Workspace::dry();  // a dry run's tensors come from a dry workspace
    dry.options.workspace = &workspace;
    run_pass(config, dry, explained);
}

TEST_CASE("--explain has a paragraph for every kind of step, the block's and model's too",
          "[explain]") {
    using K = mha::StepKind;
    for (K kind : {K::Input,         K::Embed,      K::Project,       K::Cache,      K::Append,
                   K::LatentProject, K::LatentNorm, K::SplitHeads,    K::MoveHeads,  K::Unbind,
                   K::QkNorm,        K::Rope,       K::Scores,        K::Scale,      K::Mask,
                   K::Softmax,       K::Context,    K::Attend,        K::MergeHeads, K::Contiguous,
                   K::JoinHeads,     K::Concat,     K::OutputProject, K::Norm,       K::Residual,
                   K::FfnIn,         K::Gelu,       K::FfnOut,        K::Layer,      K::Logits,
                   K::Gate}) {
        Step step;
        step.kind = kind;
        INFO(int(kind));
        CHECK(explanation(step).size() > 100);
    }
    Step logits;
    logits.kind = K::Logits;
    CHECK_THAT(explanation(logits), Catch::Contains("next character"));
    // One name, two jobs: the paragraph follows the kind and the operand, not the name.
    Step split, join, transpose, permute;
    split.kind = K::SplitHeads;
    join.kind = K::JoinHeads;
    transpose.kind = K::MoveHeads;
    permute.kind = K::MoveHeads;
    permute.operand = mha::Operand::Qkv;
    split.name = join.name = "view";
    CHECK_THAT(explanation(split), Catch::StartsWith("view splits"));
    CHECK_THAT(explanation(join), Catch::StartsWith("view joins"));
    CHECK_THAT(explanation(transpose), Catch::StartsWith("transpose swaps the token"));
    CHECK_THAT(explanation(permute), Catch::StartsWith("permute reorders"));
}

TEST_CASE("--explain in the trace: one paragraph per kind, after the step", "[explain]") {
    const test::RunResult r = test::run_mha("--trace --explain -b 1 -n 3 -d 8 -H 2 --causal");
    REQUIRE(r.status == 0);
    // view at step 4 (Q, K, V) shares one paragraph; step 13's view has its own
    CHECK(count_of(r.output, "why: view splits the last dimension") == 1);
    CHECK(count_of(r.output, "why: view joins the heads again") == 1);
    CHECK(count_of(r.output, "    why: ") == 15);  // one for each of steps 0 to 14
    CHECK(r.output.find("why: Every query is compared") > r.output.find("6  scores"));
    const test::RunResult plain = test::run_mha("--trace -b 1 -n 3 -d 8 -H 2 --causal");
    CHECK_THAT(plain.output, !Catch::Contains("why: "));
    const test::RunResult stepped =
        test::run_mha("--step --explain -b 1 -n 3 -d 8 -H 2 < /dev/null");
    CHECK_THAT(stepped.output, Catch::Contains("why: The softmax turns each row"));
}

TEST_CASE("the Markdown hand-out draws the mask grid and, with --explain, the paragraphs",
          "[markdown]") {
    const test::RunResult r =
        test::run_mha("--format markdown --explain -b 1 -n 3 -m 4 -d 8 -H 2 --causal", false);
    REQUIRE(r.status == 0);
    // bottom-right causal, N=3, M=4: query i sees keys 0..i+1
    CHECK_THAT(r.output, Catch::Contains("```\nmask for batch 0, head 0 (. attends, x blocked):\n"
                                         "         key 0 1 2 3\n"
                                         "  query 0    . . x x\n"
                                         "  query 1    . . . x\n"
                                         "  query 2    . . . .\n```\n"));
    CHECK_THAT(r.output, Catch::Contains("### What each step does\n\n**Step 0, input.** "));
    CHECK_THAT(r.output, Catch::Contains("**Step 14, project.** W_o mixes the heads."));
    CHECK(count_of(r.output, "**Step 4, view.**") == 1);
}

TEST_CASE("--format html: one well-formed, self-contained page with every step", "[html]") {
    const std::string path = test::temp_path("lesson.html");
    std::filesystem::remove(path);
    const std::string options = "-b 1 -n 4 -m 6 -d 16 -H 2 --causal";
    const test::RunResult r = test::run_mha("--format html --output " + path + " " + options);
    REQUIRE(r.status == 0);
    CHECK(r.output.empty());  // the page goes to the file, nothing to the terminal
    const std::string page = test::read_text(path);
    std::filesystem::remove(path);
    CHECK_THAT(page, Catch::StartsWith("<!DOCTYPE html>\n<html lang=\"en\">"));
    CHECK(test::XmlChecker(page).well_formed());
    // every step: as many sections as the trace has steps
    const test::RunResult trace = test::run_mha("--trace " + options);
    std::size_t traced = 0;
    std::istringstream lines(trace.output);
    for (std::string line; std::getline(lines, line);) {
        if (line.size() > 4 && line[2] == ' ' && line[3] == ' ' &&
            std::isdigit(static_cast<unsigned char>(line[1])))
            ++traced;
    }
    CHECK(traced == 21);  // cross-attention: three inputs, then steps 1-14 with 4 and 5 three times
    // every step: a card, or a part of the card before it when it repeats that card's step
    // and explanation (the key and value inputs, K's and V's view and transpose: 3 x 2)
    const std::size_t cards = count_of(page, "<section class=\"step\"");
    CHECK(cards + count_of(page, "<div class=\"also\">") == traced);
    CHECK(cards == traced - 6);
    CHECK(count_of(page, "<p class=\"why\">") == cards);
    CHECK(page.find("As above") == std::string::npos);
    // the heatmaps come first, then the steps
    CHECK(page.find("<section class=\"maps\"") < page.find("<section class=\"step\""));
    CHECK(count_of(page,
                   "<tr><th>shape</th><th>strides</th><th>contiguous</th><th>copied</th>"
                   "<th>multiply-adds</th></tr>") == traced);
    // step 6: scores (B=1, h=2, N=4, M=6), 1·2·4·6·8 = 384 multiply-adds; step 12 copies
    // B·N·d_model floats, 1·4·16·4 = 256 bytes
    CHECK_THAT(page,
               Catch::Contains("<td><code>(B=1, h=2, N=4, M=6)</code></td><td><code>(48, 24, 6, "
                               "1)</code></td><td>yes</td><td>0 B</td><td>384</td>") &&
                   Catch::Contains("<td>256 B</td>"));
    // no network: no address at all, no external script, style or font
    CHECK(page.find("http://") == std::string::npos);
    CHECK(page.find("https://") == std::string::npos);
    CHECK(page.find("src=") == std::string::npos);
    CHECK(page.find("<link") == std::string::npos);
    CHECK(page.find("@import") == std::string::npos);
    CHECK(count_of(page, "<script>") == 1);
    CHECK_THAT(page, Catch::Contains("ArrowRight") && Catch::Contains("mouseover"));
    // the mask grid and the heatmaps: 2 heads of 4 x 6 cells; bottom-right causal, query i
    // sees keys 0..i+2, so 3 + 2 + 1 cells of each head are hatched
    CHECK_THAT(page, Catch::Contains("<pre class=\"grid\">mask for batch 0, head 0"));
    CHECK(count_of(page, "<svg ") == 1);
    CHECK(count_of(page, "<rect class=\"cell") == 2 * 4 * 6);
    CHECK(count_of(page, "<rect class=\"cell masked\"") == 2 * 6);
}

TEST_CASE("--format html with --shapes-only and with a sentence", "[html]") {
    const std::string path = test::temp_path("shapes.html");
    const test::RunResult shapes =
        test::run_mha("--format html --output " + path + " --shapes-only --preset gpt2");
    REQUIRE(shapes.status == 0);
    const std::string page = test::read_text(path);
    CHECK(test::XmlChecker(page).well_formed());
    CHECK_THAT(page, Catch::Contains("nothing to draw"));
    const test::RunResult text =
        test::run_mha("--format html --output " + path +
                      " --text \"$(printf 'a\\001 <b> \\377')\" --head 1 --scale auto");
    REQUIRE(text.status == 0);
    const std::string sentence = test::read_text(path);
    std::filesystem::remove(path);
    CHECK(test::XmlChecker(sentence).well_formed());
    CHECK_THAT(sentence, Catch::Contains("&lt; b &gt;") && Catch::Contains("head 1 ["));
    CHECK(count_of(sentence, "<g class=\"panel\">") == 1);
}

TEST_CASE("--format html leaves no file when it fails", "[html]") {
    const std::filesystem::path folder = test::temp_path("html-fail");
    std::filesystem::remove_all(folder);
    std::filesystem::create_directories(folder);
    // refused before the run: too large a page
    const test::RunResult big = test::run_mha("-n 3000 --format html --max-memory 8G --output " +
                                              (folder / "big.html").string());
    CHECK(big.status == 2);
    CHECK_THAT(big.output, Catch::Contains("a page may take"));
    // stopped by SIGTERM while the pass runs: the temporary file goes too (the shell's
    // "Terminated" is captured with the output, not left on the suite's stderr)
    const test::RunResult stopped = test::run_command(
        "(" + test::mha_binary() + " -b 4 -n 600 -d 512 --format html --head 0 --output " +
        (folder / "slow.html").string() +
        " --max-memory 8G & sleep 0.3; kill -TERM $!; wait $!) 2>&1");
    CHECK(stopped.status != 0);
    CHECK(std::filesystem::is_empty(folder));
    std::filesystem::remove_all(folder);
}

}  // namespace test_lesson
