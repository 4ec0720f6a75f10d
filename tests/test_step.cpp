// --step pauses between steps (one key: Enter, b, q), says "step k of n" and erases its
// prompt, and is --trace byte for byte without a terminal; --format markdown is a table of
// the steps for course notes; --explain adds a paragraph per kind of step.

#include <catch2/catch.hpp>

#include <memory>
#include <sstream>
#include <vector>

#include "app/cli.h"
#include "app/problem.h"
#include "app/variants.h"
#include "core/attention.h"
#include "show/markdown_report.h"
#include "show/stepper.h"
#include "helpers.h"

using namespace mha;

namespace {

const std::string erase = "\r\x1b[K";  // carriage return, erase the line

// Keys from a script: each character is one key press (Enter is '\n').
class ScriptedKeys : public KeySource {
public:
    explicit ScriptedKeys(std::string keys) : keys_(std::move(keys)) {}
    Key next_key() override {
        if (at_ == keys_.size()) return Key::End;
        return key_of(std::string(1, keys_[at_++]));
    }

private:
    std::string keys_;
    std::size_t at_ = 0;
};

// Steps 1 and 2 of a tiny run, as the forward pass reports them.
Step step_numbered(int number, const std::string& tensor, const Tensor& value) {
    Step step;
    step.number = number;
    step.name = "project";
    step.tensor = tensor;
    step.expression = tensor + " = x @ W.T";
    step.dims = {"B", "N", "d_model"};
    step.shape = value.shape();
    step.strides = value.strides();
    return step;
}

RunInfo tiny_run() {
    RunInfo info;
    info.batch = info.seq_len = info.kv_len = 1;
    info.d_model = info.kdim = info.vdim = 2;
    info.heads = 1;
    info.head_dim = 2;
    info.parameters = 24;
    info.weights_source = info.inputs_source = "seeded (seed 0)";
    return info;
}

// Runs three steps through a Stepper fed with keys; returns what went to out.
std::string stepped(const std::string& keys, std::string& prompts) {
    std::ostringstream out, prompt_out;
    Stepper stepper(out, std::make_unique<ScriptedKeys>(keys), prompt_out, 3);
    const Tensor t({1, 1, 2}, {1.0f, 2.0f});
    stepper.begin(tiny_run());
    try {
        for (int n = 1; n <= 3; ++n) stepper.on_step(step_numbered(n, "T" + std::to_string(n), t));
    } catch (const StepQuit&) {
        prompts = prompt_out.str();
        return out.str() + "[quit]";
    }
    prompts = prompt_out.str();
    return out.str();
}

// "-d 16 -H 2" -> {"-d", "16", "-H", "2"} (no quoting needed here)
std::vector<std::string> words_of_options(const std::string& options) {
    std::istringstream in(options);
    std::vector<std::string> words;
    for (std::string word; in >> word;) words.push_back(word);
    return words;
}

std::size_t count_of(const std::string& text, const std::string& piece) {
    std::size_t n = 0;
    for (std::size_t at = text.find(piece); at != std::string::npos; at = text.find(piece, at + 1)) ++n;
    return n;
}

}  // namespace

TEST_CASE("--step without a terminal prints exactly what --trace prints", "[step]") {
    const std::string options = GENERATE(as<std::string>{}, "", " -b 1 -n 4 -m 6 -d 16 -H 2 --causal",
                                         " --values -b 1 -n 2 -d 4 -H 2");
    CAPTURE(options);
    const auto without_time = [](const std::string& s) { return s.substr(0, s.find("wall time")); };
    const test::RunResult trace = test::run_mha("--trace -t 1" + options + " </dev/null");
    const test::RunResult step = test::run_mha("--step -t 1" + options + " </dev/null");
    REQUIRE(trace.status == 0);
    CHECK(step.status == 0);
    CHECK(without_time(step.output) == without_time(trace.output));
    CHECK_THAT(step.output, !Catch::Contains("Enter"));
}

TEST_CASE("--step: Enter shows the next step, b the one before, q stops", "[step]") {
    std::string prompts;
    SECTION("Enter after every step prints each step once; each prompt says where and goes") {
        const std::string out = stepped("\n\n\n", prompts);
        CHECK(count_of(out, "T1 = x @ W.T") == 1);
        CHECK(count_of(out, "T3 = x @ W.T") == 1);
        CHECK(prompts == "-- step 1 of 3 · Enter: next  b: back  q: quit -- " + erase +
                             "-- step 2 of 3 · Enter: next  b: back  q: quit -- " + erase +
                             "-- step 3 of 3 · Enter: next  b: back  q: quit -- " + erase);
    }
    SECTION("space and n go on too; other keys are ignored") {
        const std::string out = stepped(" xn\n", prompts);
        CHECK(count_of(out, "T3 = x @ W.T") == 1);
        CHECK(count_of(prompts, "step 2 of 3") == 2);  // x asked again
    }
    SECTION("b shows the previous step again, Enter returns to the newest") {
        // after T2: b shows T1, Enter shows T2 again, Enter goes on to T3
        const std::string out = stepped("\nb\n\n\n\n", prompts);
        CHECK(count_of(out, "T1 = x @ W.T") == 2);
        CHECK(count_of(out, "T2 = x @ W.T") == 2);
        CHECK(count_of(out, "T3 = x @ W.T") == 1);
        CHECK(out.find("T1 = x @ W.T", out.find("T2 = x @ W.T")) != std::string::npos);
        CHECK_THAT(prompts, Catch::Contains("step 2 of 3 · Enter: next  b: back  q: quit -- " +
                                            erase + "-- step 1 of 3"));
    }
    SECTION("b on the first step shows it again") {
        const std::string out = stepped("b\n\n\n\n", prompts);
        CHECK(count_of(out, "T1 = x @ W.T") == 2);
    }
    SECTION("q stops before the next step") {
        const std::string out = stepped("\nq\n", prompts);
        CHECK(count_of(out, "T2 = x @ W.T") == 1);
        CHECK(count_of(out, "T3 = x @ W.T") == 0);
        CHECK_THAT(out, Catch::EndsWith("[quit]"));
    }
    SECTION("when the keys run out the rest prints without pauses") {
        const std::string out = stepped("\n", prompts);
        CHECK(count_of(out, "T3 = x @ W.T") == 1);
        CHECK(count_of(prompts, "Enter: next") == 2);
    }
}

TEST_CASE("--step reads keys as a terminal sends them", "[step]") {
    CHECK(key_of("\r") == Key::Next);  // Enter in raw mode
    CHECK(key_of("\n") == Key::Next);
    CHECK(key_of(" ") == Key::Next);
    CHECK(key_of("\x1b[C") == Key::Next);  // right arrow
    CHECK(key_of("\x1bOC") == Key::Next);  // right arrow, application mode
    CHECK(key_of("b") == Key::Back);
    CHECK(key_of("\x1b[D") == Key::Back);  // left arrow
    CHECK(key_of("\x7f") == Key::Back);    // backspace
    CHECK(key_of("q") == Key::Quit);
    CHECK(key_of("\x04") == Key::Quit);    // Ctrl-D
    CHECK(key_of("\x1b") == Key::Quit);    // Escape alone
    CHECK(key_of("\x1b[A") == Key::Other); // up arrow
    CHECK(key_of("x") == Key::Other);
}

TEST_CASE("--step counts the steps it will show, in every form", "[step]") {
    const std::string options = GENERATE(as<std::string>{}, "", " -b 1 -n 4 -m 6 -d 16 -H 2 --causal",
                                         " --per-head -d 16 -H 2", " --decode 3 -d 16 -H 2",
                                         " --fused-qkv -d 16 -H 2", " --block pre -d 16 -H 2",
                                         " --block post -d 16 -H 2 --rope half",
                                         " -d 16 -H 4 --kv-heads 2 --window 3",
                                         " --form mla -d 16 -H 2 --latent-dim 8 --rope-dim 4 -n 3");
    CAPTURE(options);
    const Config config = parse_args(words_of_options(options));
    const Problem problem = build_problem(config);
    struct Counter : Tracer {
        std::size_t steps = 0;
        void on_step(const Step&) override { ++steps; }
    } counter;
    run_pass(config, problem, counter);
    CHECK(planned_steps(config, problem) == counter.steps);
}

TEST_CASE("--format markdown: one table row per step, no time, same page every run",
          "[markdown]") {
    const test::RunResult r = test::run_mha("--format markdown -b 1 -n 3 -d 8 -H 2 --causal", false);
    REQUIRE(r.status == 0);
    CHECK_THAT(r.output,
               Catch::StartsWith("## Multi-head attention: B=1, N=3, M=3, d_model=8, h=2, d_k=4, "
                                 "self-attention, bias, causal, " +
                                 std::string(mha::kernel_variant_name()) + " kernels\n"));
    CHECK_THAT(r.output, Catch::Contains(
        "| step | operation | expression | shape | strides | contiguous | copied | MACs |"));
    // step 5: (B=1, N=3, h=2, d_k=4) with strides (24, 8, 4, 1) transposed to (24, 4, 8, 1)
    CHECK_THAT(r.output, Catch::Contains("| 5 | transpose | `Q.transpose(1, 2)` | (B=1, h=2, N=3, "
                                         "d_k=4) | (24, 4, 8, 1) | **no** | 0 B | 0 |"));
    // step 12 copies B·N·d_model floats: 1·3·8·4 = 96 bytes
    CHECK_THAT(r.output, Catch::Contains("| 12 | contiguous | `context.contiguous()` | "
                                         "(B=1, N=3, h=2, d_k=4) | (24, 8, 4, 1) | yes | 96 B | 0 |"));
    CHECK_THAT(r.output, Catch::Contains("- step 8: causal: query i attends to keys 0..i"));
    // 4 projections of 1·3·8·8 = 192 MACs, plus scores and context of 1·2·3·3·4 = 72 each
    CHECK_THAT(r.output, Catch::Contains("Total: 96 B copied, 912 multiply-adds."));
    // 32 lines of table and notes (step 14's note on W_o among them), and the mask grid: its
    // fences, heading, key line, 3 queries and a blank line
    CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 32 + 8);
    CHECK(test::run_mha("--format markdown -b 1 -n 3 -d 8 -H 2 --causal -t 2", false).output ==
          r.output);
}

TEST_CASE("a markdown cell escapes the table's bar", "[markdown]") {
    std::ostringstream out;
    MarkdownReport report(out);
    report.begin(RunInfo{});
    const Tensor t({1, 1, 2}, {1.0f, 2.0f});
    Step step = step_numbered(1, "T", t);
    step.expression = "a | b";
    report.on_step(step);
    CHECK_THAT(out.str(), Catch::Contains("`a \\| b`"));
}

TEST_CASE("--step with another format is refused", "[step]") {
    const test::RunResult r = test::run_mha("--step --format json");
    CHECK(r.status == 2);
    CHECK_THAT(r.output, Catch::StartsWith("mha: error: --step pauses the text trace"));
}

TEST_CASE("markdown with --shapes-only ends without output statistics", "[markdown]") {
    const test::RunResult r = test::run_mha("--format markdown --shapes-only -b 1 -n 3 -d 8 -H 2", false);
    REQUIRE(r.status == 0);
    CHECK_THAT(r.output, Catch::EndsWith("Total: 96 B copied, 912 multiply-adds. "
                                         "Shapes only: nothing was computed.\n"));
    CHECK_THAT(r.output, !Catch::Contains("nan"));
}
