// Golden traces: what mha prints for the classic example (text, --trace, JSON, Markdown),
// a small run of every form and of the modern options, MLA, --model, --flash-row, the
// lesson page and the backward (text, JSON, Markdown), compared byte for byte with tests/data/golden/trace/; and --shapes-only
// against the computed trace of each.
// Only the wall-clock time and the kernel variant (it depends on the CPU) are blanked out.
// MHA_UPDATE_GOLDEN=1 (or `make golden`) rewrites the files instead; review the diff
// before committing it.

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "helpers.h"

namespace test_golden {

namespace {

// The run's output with every wall-clock time replaced by "<ms>" and the kernel variant
// by "<kernels>".
std::string without_wall_time(const std::string& output) {
    static const std::regex text("wall time: [0-9.]+ ms");
    static const std::regex json("\"wall_time_ms\":[0-9.e+-]+");
    static const std::regex kernels("(avx512|avx2|sse2|plain) kernels");
    static const std::regex json_kernels("\"kernels\":\"(avx512|avx2|sse2|plain)\"");
    std::string blanked = std::regex_replace(output, text, "wall time: <ms> ms");
    blanked = std::regex_replace(blanked, json, "\"wall_time_ms\":<ms>");
    blanked = std::regex_replace(blanked, kernels, "<kernels> kernels");
    return std::regex_replace(blanked, json_kernels, "\"kernels\":\"<kernels>\"");
}

bool updating() {
    const char* update = std::getenv("MHA_UPDATE_GOLDEN");
    return update != nullptr && std::string(update) == "1";
}

// Every golden configuration: the file and the arguments that print it. --trace changes
// neither JSON nor Markdown: both always list every step.
const std::vector<std::pair<std::string, std::string>>& golden_runs() {
    static const std::vector<std::pair<std::string, std::string>> runs = {
        {"classic.txt", ""},
        {"classic_trace.txt", "--trace"},
        {"classic.json", "--format json"},
        {"classic.json", "--format json --trace"},
        {"classic.md", "--format markdown"},
        {"classic.md", "--format markdown --trace"},
        {"classic_shapes.txt", "--shapes-only --trace"},
        {"classic_shapes.json", "--shapes-only --format json"},
        {"gqa_cross_causal.txt", "-b 1 -n 3 -m 5 -d 16 -H 4 -G 2 --causal --trace"},
        {"gqa_cross_causal_shapes.txt",
         "-b 1 -n 3 -m 5 -d 16 -H 4 -G 2 --causal --shapes-only --trace"},
        {"streaming.txt", "-b 1 -n 3 -d 16 -H 2 --causal --attention streaming --trace"},
        {"values.txt", "-b 1 -n 2 -d 8 -H 2 --trace --values"},
        {"per_head.txt", "-b 1 -n 3 -d 16 -H 2 -G 1 --per-head --causal --trace"},
        {"decode.txt", "-b 1 -d 8 -H 2 -G 1 --decode 3 --trace"},
        {"fused_qkv.txt", "-b 1 -n 3 -d 8 -H 2 --fused-qkv --trace"},
        {"block_pre.txt", "-b 1 -n 3 -d 8 -H 2 --block pre --trace"},
        {"block_post.md", "-b 1 -n 3 -d 8 -H 2 --block post --format markdown"},
        {"modern.txt",
         "-b 1 -n 4 -d 16 -H 2 --rope half --qk-norm --softcap 30 --window 3 "
         "--sink-tokens 1 --scale-base 8 --trace"},
        {"alibi_wide.txt", "-b 1 -n 3 -d 8 -H 2 --head-dim 8 --alibi --causal --trace"},
        {"mla.txt", "-b 1 -n 3 -d 16 -H 2 --form mla --causal --trace"},
        {"mla_window_softcap.txt",
         "-b 1 -n 4 -d 16 -H 2 --form mla --latent-dim 8 --rope-dim 4 "
         "--causal --window 3 --softcap 5 --trace"},
        {"mla_streaming_shapes.txt",
         "-b 1 -n 3 -d 16 -H 2 --form mla --latent-dim 8 --rope-dim 4 "
         "--causal --attention streaming --shapes-only --trace"},
        {"mla_backward_shapes.txt",
         "-b 1 -n 3 -d 16 -H 2 --form mla --latent-dim 8 --rope-dim 4 "
         "--causal --backward --shapes-only --trace"},
        {"flash_row.txt",
         "-b 1 -n 4 -d 8 -H 2 --causal --attention streaming --flash-row 2 --trace"},
        {"model.txt", "--model ../examples/models/kjv-2x4.npz --text 'in the' --layer 1 --trace"},
        {"classic.html", "-b 1 -n 3 -d 8 -H 2 --causal --format html --output OUT"},
        {"backward.txt", "-b 1 -n 3 -d 8 -H 2 --causal --backward --trace"},
        {"backward_gqa_cross.txt", "-b 1 -n 2 -m 3 -d 8 -H 2 -G 1 --backward --trace"},
        {"backward_shapes.txt", "-b 1 -n 3 -d 8 -H 2 --causal --backward --shapes-only --trace"},
        {"backward_streaming.txt",
         "-b 1 -n 3 -d 8 -H 2 --causal --attention streaming --backward --trace"},
        {"backward.json", "-b 1 -n 2 -d 4 -H 2 --causal --backward --format json"},
        {"backward.md", "-b 1 -n 2 -d 4 -H 2 --causal --backward --format markdown"},
    };
    return runs;
}

// What the run printed, or for --output OUT the file it wrote there.
std::string golden_output(const std::string& args) {
    const std::size_t out = args.find("OUT");
    if (out == std::string::npos) {
        const test::RunResult r =
            test::run_command("COLUMNS=80 " + test::mha_binary() + " " + args);
        REQUIRE(r.status == 0);
        return r.output;
    }
    const std::string path = test::temp_path("golden.html");
    const std::string command = test::mha_binary() + " " + args.substr(0, out) + path;
    REQUIRE(test::run_command("COLUMNS=80 " + command).status == 0);
    const std::string page = test::read_text(path);
    std::remove(path.c_str());
    return page;
}

}  // namespace

TEST_CASE("the traces match their golden files", "[golden]") {
    for (const auto& [file, args] : golden_runs()) {
        CAPTURE(file, args);
        const std::string path = "data/golden/trace/" + file;
        const std::string output = without_wall_time(golden_output(args));
        if (updating()) {
            std::ofstream(path, std::ios::binary) << output;
            WARN("rewrote " << path);
        }
        CHECK(output == test::read_text(path));
    }
}

TEST_CASE("--shapes-only --trace plans the very steps --trace computes, for every golden run",
          "[golden]") {
    for (const auto& [file, golden_args] : golden_runs()) {
        const bool text_trace = golden_args.find("--trace") != std::string::npos &&
                                golden_args.find("--format") == std::string::npos;
        if (!text_trace || golden_args.find("--shapes-only") != std::string::npos) continue;
        // the values stripped: --trace without --values; --flash-row traces a computed row
        const std::string args = std::regex_replace(golden_args, std::regex(" --values"), "");
        const std::string plan_args =
            std::regex_replace(args, std::regex(" --flash-row [0-9]+"), "") + " --shapes-only";
        CAPTURE(file, args, plan_args);
        const test::RunResult computed = test::run_mha(args);
        const test::RunResult planned = test::run_mha(plan_args);
        CHECK(computed.status == 0);
        CHECK(planned.status == 0);
        const std::string steps = test::trace_steps(computed.output);
        CHECK_FALSE(steps.empty());
        CHECK(test::trace_steps(planned.output) == steps);
    }
}

}  // namespace test_golden
