// The command line end to end: the default run, the trace, and every kind of
// bad input getting one line on stderr and exit status 2.

#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>

#include "helpers.h"

TEST_CASE("with no arguments it runs the classic example") {
    const test::RunResult r = test::run_mha("");
    REQUIRE(r.status == 0);
    CHECK_THAT(r.output, Catch::Contains("B=2") && Catch::Contains("N=8") &&
                             Catch::Contains("d_model=256") && Catch::Contains("h=4"));
    CHECK_THAT(r.output, Catch::Contains("parameters: 263,168 = 4·256² + 4·256"));
    CHECK_THAT(r.output, Catch::Contains("(B=2, N=8, d_model=256)"));
    CHECK_THAT(r.output, Catch::Contains("wall time"));
}

TEST_CASE("--trace shows the 14 steps with the classic shapes") {
    const test::RunResult r = test::run_mha("--trace");
    REQUIRE(r.status == 0);
    for (const char* shape :
         {"(B=2, N=8, d_model=256)", "(B=2, N=8, h=4, d_k=64)", "(B=2, h=4, N=8, d_k=64)",
          "(B=2, h=4, N=8, M=8)", "strides (2048, 64, 256, 1)", "non-contiguous"}) {
        CHECK_THAT(r.output, Catch::Contains(shape));
    }
    for (const char* expression :
         {"Q.view(B, N, h, d_k)", "Q.transpose(1, 2)", "Q @ K.transpose(-2, -1)",
          "torch.softmax(scores, dim=-1)", "context.contiguous()",
          "concat = context.view(B, N, d_model)"}) {
        CHECK_THAT(r.output, Catch::Contains(expression));
    }
}

TEST_CASE("--format json is one document with a steps array") {
    const test::RunResult r = test::run_mha("--format json -n 3 -d 8 -H 2", false);
    REQUIRE(r.status == 0);
    CHECK(r.output.front() == '{');
    CHECK_THAT(r.output, Catch::Contains("\"steps\":[") && Catch::Contains("\"copied_bytes\":") &&
                             Catch::Contains("\"macs\":") &&
                             Catch::Contains("\"strides\":[24,4,8,1]"));
}

TEST_CASE("--name=value, short options and -xVALUE all parse") {
    const test::RunResult a =
        test::run_mha("--batch=1 --seq-len 3 -d 8 -H2 --seed=7 -t 1 --format=json", false);
    const test::RunResult b =
        test::run_mha("-b 1 -n3 --d-model=8 --heads 2 --seed 7 --threads=1 --format json", false);
    REQUIRE(a.status == 0);
    const auto body = [](const std::string& s) { return s.substr(0, s.find("\"wall_time_ms\"")); };
    CHECK(body(a.output) == body(b.output));
}

TEST_CASE("--help and --version exit 0 and document the options") {
    const test::RunResult help = test::run_mha("--help");
    CHECK(help.status == 0);
    for (const char* flag : {"--batch",
                             "--seq-len",
                             "--kv-len",
                             "--d-model",
                             "--heads",
                             "--seed",
                             "--threads",
                             "--causal",
                             "--no-bias",
                             "--trace",
                             "--values",
                             "--step",
                             "--format",
                             "--weights",
                             "--input",
                             "--key",
                             "--value",
                             "--mask",
                             "--mask-means",
                             "--key-padding-mask",
                             "--save",
                             "--max-memory",
                             "--masked-rows",
                             "--text",
                             "--demo-heads",
                             "--heatmap",
                             "--summary",
                             "--head",
                             "--color",
                             "--export-svg",
                             "--ablate-head",
                             "--no-scale"}) {
        CHECK_THAT(help.output, Catch::Contains(flag));
    }
    const test::RunResult version = test::run_mha("-V");
    CHECK(version.status == 0);
    CHECK_THAT(version.output, Catch::StartsWith("mha "));
}

TEST_CASE("bad input: one line on stderr, exit status 2") {
    const auto [args, message] = GENERATE(table<std::string, std::string>({
        {"--batch abc", "--batch expects a whole number, got 'abc'"},
        {"--batch 0", "--batch must be at least 1, got 0"},
        {"--heads -3", "--heads expects a whole number, got '-3'"},
        {"--seq-len 99999999999999999999999", "--seq-len expects a whole number"},
        {"--seed 18446744073709551616", "too large"},
        {"--d-model 100 --heads 3", "not divisible by --heads 3"},
        {"--threads 100000", "--threads must be at most 256"},
        {"--frobnicate", "unknown option '--frobnicate'"},
        {"-x", "unknown option '-x'"},
        {"stray", "unexpected argument 'stray'"},
        {"--heads", "--heads needs a value"},
        {"--trace=yes", "--trace takes no value"},
        {"--format xml", "--format expects one of json, markdown, text, got 'xml'"},
        {"--mask-means maybe --mask m.npy", "--mask-means expects one of block, keep"},
        {"--mask-means keep", "no --mask was given"},
        {"--input data/parity/float_mask/query.npy --mask data/parity/float_mask/mask.npy "
         "--mask-means keep",
         "--mask-means keep applies to bool and integer masks only"},
        {"--key k.npy", "--key and --value go together"},
        {"--key k.npy --value v.npy", "need --input"},
        {"--weights missing.npz", "missing.npz"},
        {"--input missing.npy", "missing.npy"},
        {"--weights data/parity/self_bias/weights.npz --no-bias",
         "the state dict decides the bias"},
        {"--input data/parity/self_bias/query.npy --seq-len 9", "--seq-len 9 disagrees with"},
        {"--weights data/parity/self_bias/weights.npz -d 32", "--d-model 32 disagrees with"},
        {"--weights data/parity/self_bias/weights.npz --heads 3", "not divisible by --heads 3"},
        {"--input data/parity/self_bias/query.npy --mask data/parity/mask_per_head/mask.npy "
         "--mask-means block",
         "attn_mask"},
        {"--input data/parity/cross/query.npy --key-padding-mask "
         "data/parity/padding/key_padding_mask.npy",
         "key_padding_mask"},
        {"--weights data/parity/wide/weights.npz -H 8 --input data/parity/self_bias/query.npy",
         "expected shape"},
        {"-b 100000 -n 100000", "more than --max-memory"},
        {"-b 4294967296 -n 4294967296 -m 4294967296 -H 4294967296 -d 4294967296",
         "does not fit in 64 bits"},
        {"--max-memory lots", "--max-memory expects a size like 512M or 2G"},
        {"--save ''", "--save expects a file name"},
        {"--save /nonexistent-dir/out.npz", "/nonexistent-dir/out.npz"},
    }));
    test::check_rejected(args, message);
}

TEST_CASE("a fully masked row warns on stderr and still succeeds") {
    const test::RunResult r = test::run_mha("-b 1 -n 3 -m 2 -d 8 -H 2 --causal");
    CHECK(r.status == 0);
    CHECK_THAT(r.output, Catch::Contains("mha: warning: 2 query row(s) have every key blocked"));
}

TEST_CASE("--max-memory refuses before allocating and accepts what fits") {
    CHECK(test::run_mha("-n 64 --max-memory 1M").status == 2);
    CHECK(test::run_mha("-n 64 --max-memory 64M").status == 0);
}

TEST_CASE("every example script runs") {
    const auto [script, shows] = GENERATE(table<std::string, std::string>({
        {"classic.sh", "14  project"},
        {"cross_attention.sh", "14  project"},
        {"values.sh", "14  project"},
        {"demo_heads.sh", "head 3: even"},
        {"gqa_decode.sh", "token 4 of 4 done"},
        {"gpt3_shapes.sh", "nothing was computed or allocated"},
        {"block.sh", "14  project"},
    }));
    CAPTURE(script);
    const test::RunResult r =
        test::run_command("cd .. && MHA=tests/" + test::mha_binary() + " sh examples/" +
                          script + " 2>&1");
    CHECK(r.status == 0);
    CHECK_THAT(r.output, Catch::Contains(shows));
}
