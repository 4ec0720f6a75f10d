// tests/fuzz/corpus/run replayed through fuzz_run's setup: every finding of the hardening
// rounds (zero-size dimensions, budgets, control bytes) stays fixed. Each input must run to
// the end or be refused with one printable line, and the refusals seen are the catalogue's.
// The seeds of fuzz_safetensors and fuzz_json are read the same way.

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include "app/train/train_checkpoint.h"
#include "core/error.h"
#include "fuzz/run_setup.h"
#include "io/checkpoint/config.h"
#include "io/json.h"
#include "io/npy.h"
#include "io/safetensors.h"

namespace test_fuzz_corpus {

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

namespace {

// The seeds of a byte-reading target: each read to the end, or refused with one line.
template <class Read>
std::size_t replay_seeds(const std::string& target, Read read) {
    std::size_t replayed = 0;
    for (const auto& entry : fs::directory_iterator("fuzz/corpus/" + target)) {
        std::ifstream file(entry.path(), std::ios::binary);
        const std::string input{std::istreambuf_iterator<char>(file), {}};
        INFO(entry.path().string());
        try {
            read(input);
        } catch (const mha::Error& error) {
            CHECK(std::string(error.what()).find('\n') == std::string::npos);
        }
        ++replayed;
    }
    return replayed;
}

}  // namespace

TEST_CASE("the fuzz_safetensors and fuzz_json seeds replay: each is read or refused in a line",
          "[fuzz]") {
    CHECK(replay_seeds("safetensors", [](const std::string& bytes) {
              mha::safetensors::parse_header(bytes, bytes.size(), "seed.safetensors",
                                             mha::Ledger());
          }) >= 4);
    CHECK(replay_seeds("json",
                       [](const std::string& text) { mha::json::parse(text, "seed.json"); }) >= 4);
    CHECK(replay_seeds("config", [](const std::string& text) {
              mha::checkpoint::parse_config(text, "config.json");
          }) >= 10);
}

TEST_CASE("the fuzz_checkpoint seeds replay: each is read or refused in a line", "[fuzz]") {
    CHECK(replay_seeds("checkpoint", [](const std::string& bytes) {
              mha::checkpoint_from_arrays(mha::npy::parse_npz(bytes, "seed.npz"), "seed.npz");
          }) >= 4);
}

}  // namespace test_fuzz_corpus
