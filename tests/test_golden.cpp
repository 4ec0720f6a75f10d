// Golden traces: what mha prints for the classic example (text, --trace, JSON, Markdown)
// and a small run of every form, compared byte for byte with tests/data/golden/trace/.
// Only the wall-clock time and the kernel variant (it depends on the CPU) are blanked out.
// MHA_UPDATE_GOLDEN=1 (or `make golden`) rewrites the files instead; review the diff
// before committing it.

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <string>

#include "helpers.h"

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

}  // namespace

TEST_CASE("the traces match their golden files", "[golden]") {
    // --trace changes neither JSON nor Markdown: both always list every step.
    const auto [file, args] = GENERATE(table<std::string, std::string>({
        {"classic.txt", ""},
        {"classic_trace.txt", "--trace"},
        {"classic.json", "--format json"},
        {"classic.json", "--format json --trace"},
        {"classic.md", "--format markdown"},
        {"classic.md", "--format markdown --trace"},
        {"classic_shapes.txt", "--shapes-only --trace"},
        {"classic_shapes.json", "--shapes-only --format json"},
        {"gqa_cross_causal.txt", "-b 1 -n 3 -m 5 -d 16 -H 4 -G 2 --causal --trace"},
        {"gqa_cross_causal_shapes.txt", "-b 1 -n 3 -m 5 -d 16 -H 4 -G 2 --causal --shapes-only --trace"},
        {"streaming.txt", "-b 1 -n 3 -d 16 -H 2 --causal --attention streaming --trace"},
        {"values.txt", "-b 1 -n 2 -d 8 -H 2 --trace --values"},
        {"per_head.txt", "-b 1 -n 3 -d 16 -H 2 -G 1 --per-head --causal --trace"},
        {"decode.txt", "-b 1 -d 8 -H 2 -G 1 --decode 3 --trace"},
        {"fused_qkv.txt", "-b 1 -n 3 -d 8 -H 2 --fused-qkv --trace"},
        {"block_pre.txt", "-b 1 -n 3 -d 8 -H 2 --block pre --trace"},
        {"block_post.md", "-b 1 -n 3 -d 8 -H 2 --block post --format markdown"},
        {"mla.txt", "--form mla --weights data/modern/mla_causal/weights.npz --input "
                    "data/modern/mla_causal/query.npy -H 2 --causal --window 3 --trace"},
        {"mla_streaming_shapes.txt", "--form mla -b 1 -n 3 -d 16 -H 2 --latent-dim 8 --rope-dim 4 "
                                     "--causal --attention streaming --shapes-only --trace"},
    }));
    CAPTURE(file, args);
    const std::string path = "data/golden/trace/" + file;
    const test::RunResult r = test::run_command("COLUMNS=80 " + test::mha_binary() + " " + args);
    REQUIRE(r.status == 0);
    const std::string output = without_wall_time(r.output);
    if (updating()) {
        std::ofstream(path, std::ios::binary) << output;
        WARN("rewrote " << path);
    }
    CHECK(output == test::read_text(path));
}
