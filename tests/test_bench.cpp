// mha bench as a smoke test: the tiny sizes run in well under a second; the
// table and the JSON carry every column, --backward's too; bad options are one-line errors.

#include <catch2/catch.hpp>
#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "app/bench/bench_checkpoint.h"
#include "app/bench/timing.h"
#include "app/bench/torch_process.h"
#include "app/bench/torch_choice.h"
#include "core/error.h"
#include "helpers.h"

namespace test_bench {

namespace {

// The number after the first "key": at or after `from` in a JSON text.
double json_number(const std::string& json, const std::string& key, std::size_t from = 0) {
    const std::size_t at = json.find("\"" + key + "\":", from);
    REQUIRE(at != std::string::npos);
    return std::stod(json.substr(at + key.size() + 3));
}

}  // namespace

TEST_CASE("mha bench --quick prints the table", "[bench]") {
    const test::RunResult r = test::run_mha("bench --quick --repeat 1 --threads 2", false);
    REQUIRE(r.status == 0);
    CHECK_THAT(r.output, Catch::Contains("GFLOP/s") && Catch::Contains("naive ms") &&
                             Catch::Contains("       ms   min ms   max ms  ") &&
                             Catch::Contains("scaling") && Catch::Contains("peak MiB") &&
                             Catch::Contains("faults"));
    CHECK_THAT(r.output, Catch::Contains("\n  1     8       32   4 ") &&
                             Catch::Contains("\n  2    33       64   4 "));
    CHECK_THAT(r.output, !Catch::Contains("torch"));
}

TEST_CASE("mha bench --json gives one object per size", "[bench]") {
    const test::RunResult r = test::run_mha("bench --quick --repeat 1 --json", false);
    REQUIRE(r.status == 0);
    CHECK_THAT(r.output, Catch::StartsWith("{\"tool\":\"mha bench\"") && Catch::EndsWith("]}\n"));
    CHECK_THAT(r.output,
               Catch::Contains("{\"B\":1,\"N\":8,\"d_model\":32,\"h\":4,\"macs\":36864,") &&
                   Catch::Contains("{\"B\":2,\"N\":33,\"d_model\":64,\"h\":4,"));
    for (const char* key : {"\"gflops\":", "\"naive_ms\":", "\"speedup\":", "\"ms_1_thread\":",
                            "\"scaling\":", "\"peak_mib\":", "\"faults_per_run\":"}) {
        CHECK_THAT(r.output, Catch::Contains(key));
    }
    // the spread of the timed runs: fastest <= median <= slowest, at all threads and at one
    const test::RunResult spread = test::run_mha("bench --quick --repeat 4 --json", false);
    REQUIRE(spread.status == 0);
    const std::size_t second = spread.output.find("{\"B\":2,");
    for (const std::size_t from : {std::size_t(0), second}) {
        CHECK(json_number(spread.output, "ms_min", from) <= json_number(spread.output, "ms", from));
        CHECK(json_number(spread.output, "ms", from) <= json_number(spread.output, "ms_max", from));
        CHECK(json_number(spread.output, "ms_1_thread_min", from) <=
              json_number(spread.output, "ms_1_thread", from));
        CHECK(json_number(spread.output, "ms_1_thread", from) <=
              json_number(spread.output, "ms_1_thread_max", from));
    }
}

TEST_CASE("mha bench --backward times forward + backward in the same records", "[bench]") {
    const test::RunResult r = test::run_mha("bench --quick --repeat 1 --json --backward", false);
    REQUIRE(r.status == 0);
    CHECK_THAT(r.output, Catch::Contains("\"path\":\"standard\",\"backward\":true,"));
    // (1, 8, 32, 4): the forward's 36,864 multiply-adds; the backward's dW and dx of the four
    // projections 8 x 8·32·32 = 65,536, dV, dP, dQ, dK 4 x 4·8·8·8 = 8,192, D and dS
    // 4·8·8 = 256 each: 111,104 in all
    CHECK_THAT(r.output,
               Catch::Contains("{\"B\":1,\"N\":8,\"d_model\":32,\"h\":4,\"macs\":111104,"));
    // the reference loops compute no backward
    CHECK_THAT(r.output, Catch::Contains("\"naive_ms\":null,\"naive_estimated\":false,"
                                         "\"speedup\":null,"));
    const test::RunResult table = test::run_mha("bench --quick --repeat 1 --backward", false);
    REQUIRE(table.status == 0);
    CHECK_THAT(table.output, Catch::StartsWith("mha bench --backward: self-attention, no mask, "
                                               "untraced, forward + backward (standard path)"));
}

TEST_CASE("mha bench --train times a training step of mha train's model", "[bench]") {
    const test::RunResult r = test::run_mha("bench --train --quick --repeat 1 --threads 2", false);
    REQUIRE(r.status == 0);
    CHECK_THAT(r.output, Catch::StartsWith("mha bench --train: a training step (forward, "
                                           "backward, clipping, AdamW) of\na tiny model, B 2 x "
                                           "N 16 characters, d_model 16, h 2,\n2 layers, d_ff 32, "
                                           "vocabulary 11;"));
    CHECK_THAT(r.output, Catch::Contains("\n   mha        2 ") &&
                             Catch::Contains("\n   mha        1 ") &&
                             Catch::Contains("scaling: mha's 1-thread median"));
    CHECK_THAT(r.output, !Catch::Contains("torch"));
    // --quick: B 2, N 16, d_model 16, 2 heads (d_k 8), d_ff 32, V 11, 2 layers. Per layer the
    // forward's products: in_proj 3·2·16·16·16 = 24,576, QKᵀ and PV 2 x 2·2·16·16·8 = 16,384,
    // out_proj 2·16·16·16 = 8,192, linear1 and linear2 2 x 2·16·16·32 = 32,768: 81,920; the
    // backward's twice that, 163,840, and D = rowsum(dP ∘ P) 2·2·16·16 = 1,024, dS 2·2·16·16 =
    // 1,024; two layers 2 x 247,808 = 495,616; the head's logits, dW and dx 3 x 2·16·11·16 =
    // 16,896: 512,512
    const test::RunResult json = test::run_mha("bench --train --quick --repeat 1 --json", false);
    REQUIRE(json.status == 0);
    CHECK_THAT(json.output,
               Catch::StartsWith("{\"tool\":\"mha bench\",\"train\":true,\"repeat\":1,") &&
                   Catch::Contains("\"batch\":2,\"context\":16,\"d_model\":16,\"heads\":2,"
                                   "\"layers\":2,\"d_ff\":32,\"vocab\":11,\"macs\":512512,"));
    CHECK_THAT(json.output, Catch::Contains("{\"engine\":\"mha\",\"threads\":\"1\",\"ms\":"));
}

TEST_CASE("mha bench errors", "[bench]") {
    const std::pair<const char*, const char*> cases[] = {
        {"bench --repeat 0", "mha: error: --repeat must be at least 1, got 0\n"},
        {"bench --repeat", "mha: error: --repeat needs a value (see mha bench --help)\n"},
        {"bench --fast", "mha: error: unknown bench option '--fast' (see mha bench --help)\n"},
        {"bench --threads 999", "mha: error: --threads must be at most 256, got 999\n"},
        {"bench --train --backward",
         "mha: error: bench --train times mha train's one size; it takes no --sizes, --heads or "
         "--backward\n"},
        {"bench --train --sizes 1x8x32x4",
         "mha: error: bench --train times mha train's one size; it takes no --sizes, --heads or "
         "--backward\n"},
    };
    for (const auto& c : cases) {
        const test::RunResult r = test::run_mha(c.first);
        CHECK(r.status == 2);
        CHECK(r.output == c.second);
    }
    CHECK_THAT(test::run_mha("bench --help").output, Catch::StartsWith("Usage: mha bench"));
    // the tests run in tests/, where src/app/bench/bench_torch.py is not
    CHECK(test::run_mha("bench --quick --compare-torch").output ==
          "mha: error: --compare-torch runs src/app/bench/bench_torch.py: run mha bench from the "
          "repository root\n");
}

TEST_CASE("--compare-torch knows the reference BLAS from the others", "[bench]") {
    // as the probe lists them on Debian 12: netlib's reference BLAS, then OpenBLAS (the
    // alternative for libblas.so.3 once libopenblas0-pthread is in), BLIS and ATLAS
    const std::string reference = "/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0";
    CHECK(mha::reference_blas(reference + "\n") == reference);
    CHECK(mha::reference_blas("/usr/lib/x86_64-linux-gnu/libgfortran.so.5.0.0\n" + reference) ==
          reference);
    CHECK(mha::reference_blas(
              "/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblasp-r0.3.21.so\n") == "");
    CHECK(mha::reference_blas("/usr/lib/x86_64-linux-gnu/blis-pthread/libblis.so.4\n") == "");
    CHECK(mha::reference_blas("/usr/lib/x86_64-linux-gnu/atlas/libblas.so.3.10.3\n") == "");
    CHECK(mha::reference_blas("/opt/blas/liblapack.so.3\n/usr/lib/libmkl_rt.so\n") == "");
    CHECK(mha::reference_blas("") == "");
}

TEST_CASE("mha bench refuses --timing, --checkpoint and -n where they do not apply", "[bench]") {
    const std::pair<const char*, const char*> cases[] = {
        {"bench --compare-torch --timing tigth",
         "mha: error: --timing expects turns or tight, got 'tigth'; did you mean 'tight'?\n"},
        {"bench --compare-torch --timing fast",
         "mha: error: --timing expects turns or tight, got 'fast'\n"},
        {"bench --quick --timing tight",
         "mha: error: bench --timing says how engines share the machine: give it with "
         "--compare-torch or --train\n"},
        {"bench --checkpoint test_main.cpp",
         "mha: error: bench --checkpoint expects a model folder (config.json and .safetensors), "
         "got 'test_main.cpp', which is not a folder\n"},
        {"bench --checkpoint no/such/folder",
         "mha: error: bench --checkpoint expects a model folder (config.json and .safetensors), "
         "got 'no/such/folder', which is not a folder\n"},
        {"bench --checkpoint data/checkpoints/gpt2 --backward",
         "mha: error: bench --checkpoint times the folder's forward at -n lengths; it takes no "
         "--train, --backward, --quick, --sizes or --heads\n"},
        {"bench --checkpoint data/checkpoints/gpt2 --sizes 1x8x32x4",
         "mha: error: bench --checkpoint times the folder's forward at -n lengths; it takes no "
         "--train, --backward, --quick, --sizes or --heads\n"},
        {"bench -n 128",
         "mha: error: bench -n gives the prompt lengths of --checkpoint DIR; give --sizes for "
         "attention alone\n"},
        {"bench --checkpoint data/checkpoints/gpt2 -n 8,17",
         "mha: error: bench --checkpoint: -n 17 is more than data/checkpoints/gpt2/config.json "
         "allows (16 positions)\n"},
        {"bench --checkpoint data/checkpoints/gpt2 -n 0",
         "mha: error: --seq-len must be at least 1, got 0\n"},
    };
    for (const auto& c : cases) {
        const test::RunResult r = test::run_mha(c.first);
        CHECK(r.status == 2);
        CHECK(r.output == c.second);
    }
    mha::CheckpointBenchOptions o;
    o.dir = "data/checkpoints/llama2";
    o.lengths = {8};
    o.compare_torch = true;
    REQUIRE_THROWS_WITH(mha::run_checkpoint_bench(o),
                        "bench --checkpoint --compare-torch runs GPT-2 folders only; "
                        "data/checkpoints/llama2/config.json gives model_type 'llama'");
}

TEST_CASE("mha bench --checkpoint times a folder's forward at each -n", "[bench]") {
    const test::RunResult r =
        test::run_mha("bench --checkpoint data/checkpoints/gpt2 -n 4,16 --repeat 1 --threads 2",
                      false);
    REQUIRE(r.status == 0);
    CHECK_THAT(r.output, Catch::StartsWith("mha bench --checkpoint data/checkpoints/gpt2 (gpt2, 2 "
                                           "layers, d_model 32, h 4, vocabulary 96):") &&
                             Catch::Contains("\n     N        ms    min ms    max ms  GFLOP/s  "
                                             "peak MiB\n     4 ") &&
                             Catch::Contains("\n    16 ") && !Catch::Contains("torch ms"));
    const test::RunResult json =
        test::run_mha("bench --checkpoint data/checkpoints/gpt2 -n 4 --repeat 1 --json", false);
    REQUIRE(json.status == 0);
    CHECK_THAT(json.output,
               Catch::StartsWith("{\"tool\":\"mha bench\",\"checkpoint\":true,\"layers\":2,"
                                 "\"d_model\":32,\"heads\":4,\"vocab\":96,") &&
                   Catch::Contains("\"lengths\":[\n{\"N\":4,\"macs\":"));
    CHECK(json_number(json.output, "load_ms") >= 0);
    CHECK(json_number(json.output, "peak_mib") > 0);
}

TEST_CASE("bench's prompt for a checkpoint: ids below the vocabulary, the same every time",
          "[bench]") {
    const std::vector<std::size_t> ids = mha::bench_tokens(1000, 7);
    CHECK(ids == mha::bench_tokens(1000, 7));
    CHECK(ids.size() == 1000);
    std::vector<bool> seen(7, false);
    for (const std::size_t id : ids) {
        REQUIRE(id < 7);
        seen[id] = true;
    }
    CHECK(std::find(seen.begin(), seen.end(), false) == seen.end());
}

TEST_CASE("PyTorch's best is the form and setting with the smallest median", "[bench]") {
    using mha::TorchCandidate;
    const std::vector<TorchCandidate> candidates = {
        {"1/1", "module", {5, 1, 9}},     // median 5 (one fast outlier does not win)
        {"1/2", "composed", {4, 4, 8}},   // median 4: the best
        {"2/1", "module", {4, 30, 3}},    // median 4 too, but later
        {"2/2", "composed", {6, 6, 6}},
    };
    const mha::TorchBest best = mha::fastest_torch(candidates);
    CHECK(best.setting == "1/2");
    CHECK(best.form == "composed");
    CHECK(best.ms.median == 4);
    CHECK(best.ms.min == 4);
    CHECK(best.ms.max == 8);
    REQUIRE_THROWS_WITH(mha::fastest_torch({}), "bench: PyTorch gave no form to time");
}

TEST_CASE("--timing tight splits the repeats into blocks; GFLOP/s from multiply-adds", "[bench]") {
    using Sizes = std::vector<std::size_t>;
    CHECK(mha::tight_block_sizes(1) == Sizes{1});
    CHECK(mha::tight_block_sizes(2) == Sizes{1, 1});
    CHECK(mha::tight_block_sizes(3) == Sizes{1, 1, 1});
    CHECK(mha::tight_block_sizes(7) == Sizes{3, 2, 2});
    CHECK(mha::tight_block_sizes(9) == Sizes{3, 3, 3});
    // 1e9 multiply-adds in 2 ms: 2e9 FLOP / 0.002 s = 1000 GFLOP/s
    CHECK(mha::gflops(1e9, 2) == Approx(1000));
    CHECK(mha::gflops(36864, 0.5) == Approx(0.147456));
}

TEST_CASE("the engines' runs in turns and in tight blocks, in order", "[bench]") {
    // each engine says it took 30 ms, so a warm-up (25 ms of untimed runs) is one run
    std::string calls;
    const std::vector<std::function<double()>> engines = {[&] { calls += 'a'; return 30.0; },
                                                          [&] { calls += 'b'; return 30.0; }};
    const auto times = mha::time_engines(engines, 4, mha::Timing::Tight, false);
    // blocks of 2, 1 and 1 runs, engine by engine, each after a warm-up run
    CHECK(calls == "aaabbbaabbaabb");
    REQUIRE(times.size() == 2);
    CHECK(times[0] == std::vector<double>(4, 30.0));
    CHECK(times[1] == std::vector<double>(4, 30.0));
    calls.clear();
    mha::time_engines(engines, 2, mha::Timing::Turns, false);
    CHECK(calls == "aabbaabb");  // a turn: one untimed run, one timed
    // with a pause, tight sleeps 0.15 s before each engine's block: one block here, two engines
    const double paused_ms =
        mha::time_ms([&] { mha::time_engines(engines, 1, mha::Timing::Tight, true); });
    CHECK(paused_ms >= 300);
    const mha::Arg tight{"--timing", "tight"}, turns{"--timing", "turns"};
    CHECK(mha::parse_timing(tight) == mha::Timing::Tight);
    CHECK(mha::parse_timing(turns) == mha::Timing::Turns);
    CHECK(mha::timing_name(mha::Timing::Tight) == "tight");
}

}  // namespace test_bench
