// mha train's memory estimate against the peak resident memory of real runs: each case is run
// with --max-memory at exactly the need its refusal reports, and its peak RSS (wait4's
// ru_maxrss) must stay within 1.1 times that need plus the binary's own baseline. Tagged
// [memory]: the sanitizers' shadow memory makes RSS meaningless, so the Makefile's ASan and
// TSan runs leave it out. Each case runs in about a second.


#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "helpers.h"

namespace test_train_memory {

namespace {

namespace fs = std::filesystem;

constexpr double allowed_ratio = 1.1;   // peak RSS over the estimate, past the baseline
constexpr double generous_ratio = 1.5;  // the estimate over the peak: no wild overestimate

// The peak RSS in bytes of `mha ARGS`, its output thrown away; 0 if it did not exit 0.
std::uint64_t peak_rss(const std::string& args) {
    const long kib = test::peak_rss_kib(test::mha_binary() + " " + args + " >/dev/null 2>&1");
    return kib > 0 ? std::uint64_t(kib) * 1024 : 0;
}

// "needs about 216.6 MiB" or "takes about 12 MiB" in a refusal: the bytes (the printed value is
// rounded up, so it is at least the need).
std::uint64_t reported_need(const std::string& refusal) {
    const std::regex about("about ([0-9.]+) (B|KiB|MiB|GiB)");
    std::smatch match;
    REQUIRE(std::regex_search(refusal, match, about));
    const std::string unit = match[2];
    const double scale = unit == "B" ? 1 : unit == "KiB" ? 1024 : unit == "MiB" ? 1 << 20 : 1 << 30;
    return std::uint64_t(std::stod(match[1]) * scale + 0.5);
}

}  // namespace

TEST_CASE("mha train admitted at exactly its estimated need peaks within 1.1 times it",
          "[memory]") {
    const fs::path dir = test::temp_path("train-memory");
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string out = " --out " + (dir / "m.npz").string();
    const std::string corpus = (dir / "corpus.txt").string();
    {
        // 4 MB of text: its decoding outweighs the small model trained on it
        std::ofstream text(corpus);
        for (int i = 0; text.tellp() < 4000000; ++i)
            text << "line " << i << ": In the beginning God created the heaven and the earth.\n";
    }
    const std::uint64_t baseline = peak_rss("train --help");
    const auto [what, args, limit] = GENERATE_COPY(table<std::string, std::string, std::string>({
        // the parameters dominate: the checkpoint's copies of them and AdamW's moments
        {"parameters", "-d 1024 -H 1 --d-ff 16 --layers 1 --context 16 --batch 2 -t 1", "13M"},
        // the activations of the default sizes, one and two micro-batches at a time
        {"activations, 1 thread", "-t 1", "13M"},
        {"activations, 2 threads", "-t 2", "13M"},
        // the corpus, decoded before the model exists
        {"corpus", "--corpus " + corpus + " --context 16 --batch 2 -d 8 -H 2 --d-ff 16", "5M"},
    }));
    INFO(what << ": mha train " << args);
    const std::string run = "train --steps 1 " + args + out;
    const test::RunResult refused = test::run_mha(run + " --max-memory " + limit);
    REQUIRE(refused.status == 2);
    const std::uint64_t need = reported_need(refused.output);
    const std::uint64_t peak = peak_rss(run + " --max-memory " + std::to_string(need));
    INFO("need " << need << " B, peak " << peak << " B, baseline " << baseline << " B");
    CHECK(peak > 0);  // it ran, and exited 0
    CHECK(double(peak) <= allowed_ratio * double(need) + double(baseline));
    CHECK(double(need) <= generous_ratio * double(peak));
    fs::remove_all(dir);
}

}  // namespace test_train_memory
