// tests/fuzz/corpus/run replayed through fuzz_run's setup: every finding of the hardening
// rounds (zero-size dimensions, budgets, control bytes) stays fixed. Each input must run to
// the end or be refused with one printable line, and the refusals seen are the catalogue's.

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include "fuzz/run_setup.h"

namespace fs = std::filesystem;

TEST_CASE("the fuzz_run corpus replays: each input runs or is refused with one line", "[fuzz]") {
    // the findings: the start of the message each must give (zero_batch and zero_seq_len
    // are not refused: an empty batch or sequence is computed, as PyTorch does)
    const std::map<std::string, std::string> refusals = {
        {"zero_d_model", ": the input has shape (1, 4, 0), so d_model=0"},
        {"zero_kdim", ": the key has shape (1, 4, 0), so kdim=0"},
        {"zero_e", ": array 'in_proj_weight' has shape (0, 0), so E=0"},
        {"zero_e_scratch", ": array 'W_q.weight' has shape (0, 0), so E=0"},
        {"block_budget", "once decoded, more than the "},
        {"third_file_budget", "the 1352 B left of --max-memory"},
        {"text_budget", "--text: 6 tokens of width 256 need 9 KiB"},
        {"value_with_newline", "--batch expects a whole number"},
    };
    std::size_t replayed = 0;
    for (const auto& entry : fs::directory_iterator("fuzz/corpus/run")) {
        std::ifstream file(entry.path(), std::ios::binary);
        const std::string input{std::istreambuf_iterator<char>(file), {}};
        const std::string name = entry.path().filename().string();
        INFO(name);
        const std::string message = mha::fuzz::run_setup(input);
        CHECK(message.find('\n') == std::string::npos);
        const auto expected = refusals.find(name);
        if (expected != refusals.end()) CHECK_THAT(message, Catch::Contains(expected->second));
        if (name == "zero_batch" || name == "zero_seq_len") CHECK(message.empty());
        ++replayed;
    }
    CHECK(replayed >= refusals.size());
}
