// PyTorch parity: every case in data/cases.txt (batch-first), data/exact_cases.txt
// (seq-first, unbatched, 4-D masks, Fortran-order and big-endian files, num_heads in
// the state dict) and data/modern_cases.txt run through the binary with --save, compared
// with the output and per-head weights PyTorch computed (data/make_fixtures.py,
// data/make_exact_fixtures.py and data/make_modern_fixtures.py made them; see
// data/README.md).

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>

#include "helpers.h"
#include "io/npy.h"

namespace test_parity {

namespace {

constexpr double weights_tolerance = 1e-5;  // attention weights, max abs difference
constexpr double output_tolerance = 1e-4;   // outputs, max abs difference

// The output and per-head weights mha saved at `saved` (then removed) against `expected`.
void check_saved(const std::string& saved, const std::string& expected_path) {
    const auto expected = mha::npy::read_npz(expected_path);
    const auto actual = mha::npy::read_npz(saved);
    std::remove(saved.c_str());
    test::require_close(mha::npy::to_tensor(actual.at("attn_weights")),
                        mha::npy::to_tensor(expected.at("attn_weights")), weights_tolerance);
    test::require_close(mha::npy::to_tensor(actual.at("output")),
                        mha::npy::to_tensor(expected.at("output")), output_tolerance);
}

// Runs every case of `cases_file` from its folder under `root` and compares with PyTorch.
void check_cases(const std::string& cases_file, const std::string& root, std::size_t at_least) {
    const std::vector<test::FixtureCase> cases = test::read_cases(cases_file);
    REQUIRE(cases.size() >= at_least);
    for (const test::FixtureCase& c : cases) {
        SECTION(c.name) {
            const std::string dir = root + c.name + "/";
            const std::string saved = test::temp_path(c.name + ".npz");
            const std::string args = test::fixture_options(dir) + c.options + " --save " + saved;
            INFO("mha" << args);
            const test::RunResult run = test::run_mha(args);
            REQUIRE(run.status == 0);
            check_saved(saved, dir + "expected.npz");
        }
    }
}

}  // namespace

TEST_CASE("mha reproduces the modern fixtures in every form that takes them", "[modern]") {
    const std::vector<test::FixtureCase> cases = test::read_cases("data/modern_cases.txt");
    REQUIRE(cases.size() >= 15);
    const std::string form = GENERATE(as<std::string>{}, "", " --per-head", " --fused-qkv",
                                      " --decode 0", " -t 3 --trace --values");
    for (const test::FixtureCase& c : cases) {
        const std::string dir = "data/modern/" + c.name + "/";
        const bool cross = test::exists(dir + "key.npy");
        const bool causal = c.options.find("--causal") != std::string::npos ||
                            c.options.find("--window") != std::string::npos;
        const bool gqa = c.options.find("--kv-heads") != std::string::npos;  // fused: G = h only
        const bool block = c.options.find("--block") != std::string::npos;  // wraps the packed form
        if (((cross || gqa) && form == " --fused-qkv") || (cross && form == " --decode 0") ||
            (form == " --decode 0" && !causal) ||
            (block && form != "" && form != " -t 3 --trace --values"))
            continue;
        SECTION(c.name + form) {
            const auto expected = mha::npy::read_npz(dir + "expected.npz");
            const mha::Tensor weights = mha::npy::to_tensor(expected.at("attn_weights"));
            // --decode T runs T tokens: T = N of the fixture
            const std::string run_form =
                form == " --decode 0" ? " --decode " + std::to_string(weights.size(2)) : form;
            const std::string saved = test::temp_path(c.name + ".npz");
            const std::string args =
                test::fixture_options(dir) + c.options + run_form + " --save " + saved;
            INFO("mha" << args);
            const test::RunResult run = test::run_mha(args + " > /dev/null");
            REQUIRE(run.status == 0);
            const auto actual = mha::npy::read_npz(saved);
            std::remove(saved.c_str());
            test::require_close(mha::npy::to_tensor(actual.at("attn_weights")), weights,
                                weights_tolerance);
            test::require_close(mha::npy::to_tensor(actual.at("output")),
                                mha::npy::to_tensor(expected.at("output")), output_tolerance);
        }
    }
}

TEST_CASE("mha reproduces GPT-2's attention from its c_attn and c_proj, in every form", "[gpt2]") {
    // data/make_gpt2_fixture.py: two blocks named as Hugging Face's GPT2Model saves them
    const std::string dir = "data/gpt2/";
    const std::string form = GENERATE(as<std::string>{}, "", " --per-head", " --fused-qkv",
                                      " --decode 5", " -t 3 --trace");
    const std::string saved = test::temp_path("gpt2.npz");
    const std::string args = test::fixture_options(dir) +
                             " --heads 4 --causal --weights-prefix h.1.attn." + form + " --save " +
                             saved;
    INFO("mha" << args);
    const test::RunResult run = test::run_mha(args);
    REQUIRE(run.status == 0);
    CHECK_THAT(
        test::flat(run.output),
        Catch::Contains("weights: GPT-2's Conv1D stores (in, out) and computes x @ W + b, so "
                        "in_proj_weight = c_attn.weight.T (3·d_model, d_model)"));
    check_saved(saved, dir + "expected.npz");
}

TEST_CASE("mha reproduces timm's ViT attention from its qkv and proj, in every form", "[timm]") {
    // data/make_timm_fixture.py: two blocks named as timm's VisionTransformer saves them
    const std::string dir = "data/timm/";
    const std::string form =
        GENERATE(as<std::string>{}, "", " --per-head", " --fused-qkv", " -t 3 --trace");
    const std::string saved = test::temp_path("timm.npz");
    const std::string args = test::fixture_options(dir) +
                             " --heads 4 --weights-prefix blocks.1.attn." + form + " --save " + saved;
    INFO("mha" << args);
    const test::RunResult run = test::run_mha(args + " > /dev/null");
    REQUIRE(run.status == 0);
    check_saved(saved, dir + "expected.npz");
}

TEST_CASE("timm's blocks: the prefixes to choose from", "[timm]") {
    test::check_rejected("--weights data/timm/weights.npz --heads 4",
                         "data/timm/weights.npz: 2 attention modules, under 'blocks.0.attn.', "
                         "'blocks.1.attn.'; choose one with --weights-prefix blocks.0.attn.");
}

TEST_CASE("GPT-2's blocks: the prefixes to choose from; the mask it needs", "[gpt2]") {
    test::check_rejected("--weights data/gpt2/weights.npz --heads 4",
                         "data/gpt2/weights.npz: 2 attention modules, under 'h.0.attn.', "
                         "'h.1.attn.'; choose one with --weights-prefix h.0.attn.");
    const test::RunResult r = test::run_mha(
        "--weights data/gpt2/weights.npz --weights-prefix "
        "h.0.attn. --heads 4 --input data/gpt2/query.npy");
    CHECK(r.status == 0);
    CHECK_THAT(test::flat(r.output), Catch::Contains("GPT-2's attention is causal: add --causal"));
}

TEST_CASE("keys and values of other widths are cross-attention even when M = N", "[exact]") {
    // data/parity/kdim_vdim's module (kdim 12, vdim 10) given M = N = 4 keys: the sizes alone
    // must not make x play key and value (the dry run once did, and refused the files)
    const std::string key = test::temp_path("key12.npy"), value = test::temp_path("value10.npy");
    for (const auto& [path, width] : {std::pair{key, std::size_t{12}}, {value, std::size_t{10}}}) {
        std::ofstream(path, std::ios::binary)
            << mha::npy::to_npy_bytes(mha::Tensor(mha::Shape{2, 4, width}));
    }
    const test::RunResult run = test::run_mha(
        "--weights data/parity/kdim_vdim/weights.npz --heads 4 --input "
        "data/parity/kdim_vdim/query.npy --key " + key + " --value " + value);
    std::remove(key.c_str());
    std::remove(value.c_str());
    INFO(run.output);
    CHECK(run.status == 0);
}

TEST_CASE("mha reproduces PyTorch on every fixture case") {
    check_cases("data/cases.txt", "data/parity/", 16);
}

TEST_CASE("mha reproduces PyTorch's layouts, unbatched inputs and mask forms", "[exact]") {
    check_cases("data/exact_cases.txt", "data/exact/", 10);
}

TEST_CASE("the result does not depend on the thread count, nor on tracing") {
    const std::string dir = "data/parity/wide/";
    std::vector<std::string> outputs;
    for (const char* extra : {" -t 1", " -t 2", " -t 5 --trace --values", " -t 16 --format json"}) {
        const std::string saved = test::temp_path("threads.npz");
        REQUIRE(
            test::run_mha(test::fixture_options(dir) + " --heads 8 --save " + saved + extra, false)
                .status == 0);
        std::ifstream file(saved, std::ios::binary);
        outputs.emplace_back(std::istreambuf_iterator<char>(file),
                             std::istreambuf_iterator<char>());
        std::remove(saved.c_str());
    }
    for (const std::string& bytes : outputs) CHECK(bytes == outputs.front());
}

TEST_CASE("the trace says how seq-first and unbatched files are read and saved", "[exact]") {
    const test::RunResult seq_first = test::run_mha(
        "--trace --seq-first --input data/exact/seq_first_self/query.npy"
        " --weights data/exact/seq_first_self/weights.npz");
    REQUIRE(seq_first.status == 0);
    CHECK_THAT(seq_first.output, Catch::Contains("B=2  N=5  M=5") &&
                                     Catch::Contains("layout: seq-first") &&
                                     Catch::Contains("x.transpose(0, 1)"));
    const test::RunResult unbatched = test::run_mha(
        "--trace --heads 4 --input data/exact/unbatched_self/query.npy"
        " --weights data/exact/unbatched_self/weights.npz");
    REQUIRE(unbatched.status == 0);
    CHECK_THAT(unbatched.output, Catch::Contains("B=1  N=5") &&
                                     Catch::Contains("layout: unbatched") &&
                                     Catch::Contains("x.unsqueeze(0)"));
    const test::RunResult batch_first = test::run_mha(
        "--trace --heads 4 --input data/parity/self_bias/query.npy"
        " --weights data/parity/self_bias/weights.npz");
    CHECK_THAT(batch_first.output, !Catch::Contains("layout:"));
}

TEST_CASE("the trace shows the appended key/value positions and the causal alignment", "[exact]") {
    const std::string dir = "data/exact/bias_kv_zero_attn_seq_first/";
    const test::RunResult appended =
        test::run_mha("--trace --seq-first --add-zero-attn --input " + dir +
                      "query.npy --weights " + dir + "weights.npz --mask " + dir + "mask.npy");
    REQUIRE(appended.status == 0);
    CHECK_THAT(appended.output, Catch::Contains("append       K = cat([cat([K, bias_k") &&
                                    Catch::Contains("(B=2, M+2=5, d_model=16)") &&
                                    Catch::Contains("M 3 -> 5: add_bias_kv appends"));
    const test::RunResult top_left =
        test::run_mha("--trace -b 1 -n 2 -m 3 -d 8 -H 2 --causal=top-left");
    CHECK_THAT(top_left.output, Catch::Contains("causal, top-left aligned"));
    const test::RunResult bare = test::run_mha("--trace -b 1 -n 2 -m 3 -d 8 -H 2 --causal");
    CHECK_THAT(bare.output, Catch::Contains("causal, bottom-right aligned"));
}

TEST_CASE("timm's gradients come back under qkv and proj, with the prefix", "[timm]") {
    const std::string saved = test::temp_path("timm_grad.npz");
    REQUIRE(test::run_mha(test::fixture_options("data/timm/") +
                          " --heads 4 --weights-prefix blocks.1.attn. --backward --save " + saved +
                          " > /dev/null")
                .status == 0);
    const auto arrays = mha::npy::read_npz(saved);
    std::remove(saved.c_str());
    CHECK(arrays.at("grad.blocks.1.attn.qkv.weight").shape == mha::Shape{48, 16});
    CHECK(arrays.at("grad.blocks.1.attn.qkv.bias").shape == mha::Shape{48});
    CHECK(arrays.at("grad.blocks.1.attn.proj.weight").shape == mha::Shape{16, 16});
    CHECK(arrays.at("grad.blocks.1.attn.proj.bias").shape == mha::Shape{16});
}

}  // namespace test_parity
