// The backward pass against PyTorch: every case of data/grad_cases.txt (made by
// data/make_grad_fixtures.py) through mha --backward --grad-output ... --save, each saved
// gradient compared with torch.autograd's under the state-dict name the weights file used;
// the options and files --backward refuses.

#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include "helpers.h"
#include "io/npy.h"

namespace test_backward_torch {

namespace {

// A gradient passes when mha is within relative_tolerance of float32 autograd, relative to the
// gradient's largest magnitude; or, for a gradient that is rounding noise around zero in exact
// arithmetic (b_k's: softmax ignores a constant added to a row of scores), when mha is no
// further from float64 autograd than rounding_factor times float32 autograd is.
constexpr double relative_tolerance = 1e-4;
constexpr double rounding_factor = 4.0;
constexpr double output_tolerance = 1e-4;  // the output, max abs difference (as test_parity)

// The largest |a - b| where neither is NaN, and whether a and b are NaN at the same places.
struct Distance {
    double worst = 0.0;
    bool same_nans = true;
};

Distance distance(const std::vector<double>& a, const std::vector<double>& b) {
    REQUIRE(a.size() == b.size());
    Distance d;
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (std::isnan(a[i]) || std::isnan(b[i])) {
            d.same_nans = d.same_nans && std::isnan(a[i]) && std::isnan(b[i]);
            continue;
        }
        d.worst = std::max(d.worst, std::fabs(a[i] - b[i]));
    }
    return d;
}

double largest_magnitude(const std::vector<double>& values) {
    double largest = 0.0;
    for (const double v : values) {
        if (!std::isnan(v)) largest = std::max(largest, std::fabs(v));
    }
    return largest;
}

void check_gradient(const std::string& name, const mha::npy::Array& actual,
                    const mha::npy::Array& single, const mha::npy::Array& exact) {
    CAPTURE(name);
    REQUIRE(mha::to_string(actual.shape) == mha::to_string(single.shape));
    const Distance to_single = distance(actual.values, single.values);
    const Distance to_exact = distance(actual.values, exact.values);
    const Distance torch_rounding = distance(single.values, exact.values);
    const double scale = largest_magnitude(single.values);
    CAPTURE(to_single.worst, scale, to_exact.worst, torch_rounding.worst);
    CHECK(to_single.same_nans);
    CHECK((to_single.worst <= relative_tolerance * scale ||
           to_exact.worst <= rounding_factor * torch_rounding.worst));
}

using Arrays = std::map<std::string, mha::npy::Array>;

std::set<std::string> gradient_names(const Arrays& arrays) {
    std::set<std::string> names;
    for (const auto& entry : arrays) {
        if (entry.first.rfind("grad.", 0) == 0) names.insert(entry.first);
    }
    return names;
}

// mha on case folder `dir` (its files, its dO) with `options`, saving: every gradient the
// folder's expected.npz names, and no other, within check_gradient's tolerance; the output too.
void check_saved(const std::string& dir, const std::string& name, const std::string& options) {
    const std::string saved = test::temp_path("grad-" + name + ".npz");
    const std::string args = test::fixture_options(dir) + " --grad-output " + dir +
                             "grad_output.npy" + options + " --save " + saved;
    INFO("mha" << args);
    const test::RunResult run = test::run_mha(args + " > /dev/null");
    REQUIRE(run.status == 0);
    const Arrays actual = mha::npy::read_npz(saved);
    std::remove(saved.c_str());
    const Arrays single = mha::npy::read_npz(dir + "expected.npz");
    const Arrays exact = mha::npy::read_npz(dir + "expected64.npz");
    CHECK(gradient_names(actual) == gradient_names(single));
    for (const std::string& gradient : gradient_names(single)) {
        REQUIRE(actual.count(gradient) == 1);
        check_gradient(gradient, actual.at(gradient), single.at(gradient), exact.at(gradient));
    }
    test::require_close(mha::npy::to_tensor(actual.at("output")),
                        mha::npy::to_tensor(single.at("output")), output_tolerance);
}

}  // namespace

TEST_CASE("mha --backward gives torch.autograd's gradients under the state dict's names",
          "[backward]") {
    const std::vector<test::FixtureCase> cases = test::read_cases("data/grad_cases.txt");
    REQUIRE(cases.size() >= 30);
    // the fused form takes one projection of one input into h key/value heads; neither it nor
    // the per-head form appends key/value positions
    const std::string form = GENERATE(as<std::string>{}, "", " --fused-qkv", " --per-head");
    for (const test::FixtureCase& c : cases) {
        const std::string dir = "data/grad/" + c.name + "/";
        const bool appended = c.options.find("--add-zero-attn") != std::string::npos ||
                              c.name.find("bias_kv") != std::string::npos;
        const bool fused_only =
            test::exists(dir + "key.npy") || c.options.find("--kv-heads") != std::string::npos;
        if ((!form.empty() && appended) || (form == " --fused-qkv" && fused_only)) continue;
        SECTION(c.name + form) { check_saved(dir, c.name, c.options + form); }
    }
}

TEST_CASE("mha --form mla --backward gives torch.autograd's MLA gradients under the file's names",
          "[backward][mla]") {
    // data/grad_mla_cases.txt, made by data/make_mla_grad_fixtures.py: plain (in Hugging Face's
    // and the from-scratch names), causal, masked (attn_mask, key padding), window and soft-cap;
    // every case on both paths
    const std::vector<test::FixtureCase> cases = test::read_cases("data/grad_mla_cases.txt");
    REQUIRE(cases.size() == 5);
    const std::string path = GENERATE(as<std::string>{}, "", " --attention streaming");
    const std::string dir = "data/grad_mla/";
    for (const test::FixtureCase& c : cases) {
        SECTION(c.name + path) { check_saved(dir + c.name + "/", c.name, c.options + path); }
    }
}

TEST_CASE("the backward header names dO: seeded or its file", "[backward]") {
    const test::RunResult seeded = test::run_mha("--backward -b 1 -n 3 -d 8 -H 2 --seed 7");
    CHECK(seeded.status == 0);
    CHECK_THAT(test::flat(seeded.output), Catch::Contains("dO: seeded standard normal (seed 7)"));
    const std::string dir = "data/grad/self/";
    const test::RunResult file =
        test::run_mha("--weights " + dir + "weights.npz --heads 2 " + "--input " + dir +
                      "query.npy --grad-output " + dir + "grad_output.npy");
    CHECK(file.status == 0);
    CHECK_THAT(test::flat(file.output), Catch::Contains("dO: " + dir + "grad_output.npy"));
    CHECK_THAT(test::run_mha("-b 1 -n 3 -d 8 -H 2").output, !Catch::Contains("dO:"));
    const std::string masked = "data/grad/fully_masked/";
    const test::RunResult nan =
        test::run_command(test::mha_binary() + " --heads 2 --weights " + masked +
                          "weights.npz --input " + masked + "query.npy --key-padding-mask " +
                          masked + "key_padding_mask.npy --backward 2>&1 >/dev/null");
    CHECK_THAT(nan.output, Catch::Contains("their attention weights are NaN, as in PyTorch "
                                           "(--masked-rows zero gives zeros), and so are the "
                                           "gradients they reach"));
}

TEST_CASE("backward refuses the forms it cannot differentiate and bad dO files", "[backward]") {
    test::check_rejected(
        "--backward --compare 1,2",
        "--backward differentiates one attention layer in the packed, --fused-qkv, --per-head "
        "or --form mla form, a --block or a --model; it cannot be combined with --compare");
    test::check_rejected("--backward --decode 4",
                         "--backward does not run on --decode: decoding with a KV cache computes "
                         "the same function as the causal packed pass, so its gradients are that "
                         "pass's; run --causal without --decode");
    test::check_rejected("--shapes-only --grad-output data/bad/x.npy",
                         "--shapes-only plans the backward from sizes alone");
    const std::string input = "--input data/bad/x.npy --grad-output data/bad/";
    test::check_rejected(input + "rank2.npy",
                         "data/bad/rank2.npy: --grad-output has shape (5, 16), expected the "
                         "output's (B, N, d_model) = (2, 5, 16)");
    test::check_rejected("--input data/bad/rank2.npy --grad-output data/bad/x.npy",
                         "data/bad/x.npy: --grad-output has shape (2, 5, 16), expected the "
                         "output's (N, d_model) = (5, 16)");
    test::check_rejected(input + "int32.npy",
                         "data/bad/int32.npy: --grad-output is int32, expected float32 or float64");
    test::check_rejected(input + "nan.npy", "data/bad/nan.npy: --grad-output has NaN");
    test::check_rejected(input + "inf.npy", "data/bad/inf.npy: --grad-output has -inf");
    test::check_rejected(input + "missing.npy", "data/bad/missing.npy");
}

TEST_CASE("the streaming path saves the standard path's gradients on every PyTorch case",
          "[backward]") {
    // the same cases on both paths: P stored, or recomputed tile by tile from the row
    // log-sum-exp; the sums run in another order, so they agree to float32 rounding
    constexpr double rounding = 1e-5;  // relative to the gradient's largest magnitude
    for (const test::FixtureCase& c : test::read_cases("data/grad_cases.txt")) {
        SECTION(c.name) {
            const std::string dir = "data/grad/" + c.name + "/";
            const std::string args = test::fixture_options(dir) + " --grad-output " + dir +
                                     "grad_output.npy" + c.options + " --save ";
            const std::string standard = test::temp_path("standard-" + c.name + ".npz");
            const std::string streamed = test::temp_path("streamed-" + c.name + ".npz");
            INFO("mha" << args);
            REQUIRE(test::run_mha(args + standard + " > /dev/null").status == 0);
            const test::RunResult run = test::run_command(test::mha_binary() + args + streamed +
                                                          " --attention streaming 2>&1 >/dev/null");
            REQUIRE(run.status == 0);
            CHECK_THAT(run.output, Catch::Contains("mha: note: --save wrote output and the "
                                                   "gradients without attn_weights"));
            const Arrays a = mha::npy::read_npz(standard);
            const Arrays b = mha::npy::read_npz(streamed);
            std::remove(standard.c_str());
            std::remove(streamed.c_str());
            CHECK(b.count("attn_weights") == 0);
            CHECK(gradient_names(a) == gradient_names(b));
            for (const std::string& name : gradient_names(a)) {
                CAPTURE(name);
                REQUIRE(b.count(name) == 1);
                const Distance d = distance(b.at(name).values, a.at(name).values);
                CHECK(d.same_nans);
                CHECK(d.worst <= rounding * std::max(1.0, largest_magnitude(a.at(name).values)));
            }
        }
    }
}

namespace {

// Writes one array of a fixture as its own .npy file (what --input and --grad-output read).
std::string npy_file(const Arrays& arrays, const std::string& name, const std::string& path) {
    std::ofstream(path, std::ios::binary)
        << mha::npy::to_npy_bytes(mha::npy::to_tensor(arrays.at(name)));
    return path;
}

}  // namespace

TEST_CASE("mha --block --backward gives nn.TransformerEncoderLayer's gradients under its names",
          "[backward]") {
    // data/make_train_op_fixtures.py: d_model 8, 2 heads, d_ff 16, GELU, dropout 0; pre-LN under
    // a causal mask, post-LN without; each gradient saved as grad.NAME32 and grad.NAME64
    const auto [name, options] =
        GENERATE(std::make_pair(std::string("block_pre"), std::string(" --block pre --causal")),
                 std::make_pair(std::string("block_post"), std::string(" --block post")));
    CAPTURE(name);
    const Arrays fixture = mha::npy::read_npz("data/train_ops/" + name + ".npz");
    const std::string x = npy_file(fixture, "x", test::temp_path(name + "-x.npy"));
    const std::string dout = npy_file(fixture, "grad_output", test::temp_path(name + "-do.npy"));
    const std::string saved = test::temp_path(name + "-grads.npz");
    const std::string args = "--weights data/train_ops/" + name + "_weights.npz --heads 2" +
                             options + " --input " + x + " --grad-output " + dout + " --save " +
                             saved;
    INFO("mha " << args);
    const test::RunResult run = test::run_mha(args + " > /dev/null");
    std::remove(x.c_str());
    std::remove(dout.c_str());
    REQUIRE(run.status == 0);
    const Arrays actual = mha::npy::read_npz(saved);
    std::remove(saved.c_str());
    std::set<std::string> expected;
    for (const auto& entry : fixture) {
        const std::string& array = entry.first;
        if (array.rfind("grad.", 0) != 0 || array.substr(array.size() - 2) != "32") continue;
        const std::string gradient = array.substr(0, array.size() - 2);
        expected.insert(gradient);
        REQUIRE(actual.count(gradient) == 1);
        check_gradient(gradient, actual.at(gradient), entry.second, fixture.at(gradient + "64"));
    }
    CHECK(gradient_names(actual) == expected);
    CHECK(expected.size() == 13);  // the input and the block's 12 arrays
    test::require_close(mha::npy::to_tensor(actual.at("output")),
                        mha::npy::to_tensor(fixture.at("output32")), output_tolerance);
}

TEST_CASE("--shapes-only --backward plans the block's backward around attention's", "[backward]") {
    for (const std::string kind : {"pre", "post"}) {
        const test::RunResult run =
            test::run_mha("--shapes-only --backward --block " + kind + " --trace");
        CAPTURE(kind);
        REQUIRE(run.status == 0);
        const std::string out = test::flat(run.output);
        CHECK_THAT(out, Catch::Contains("b21 grad dout = out.grad"));
        CHECK_THAT(out, Catch::Contains("b14 grad dOut = d"));
        CHECK_THAT(out, Catch::Contains("b15 residual dx = dx + d"));
    }
}

TEST_CASE("--gate matches PyTorch's gated attention forward and backward, in every form it takes",
          "[backward][gate]") {
    // data/grad_gate_cases.txt, made by data/make_gate_fixtures.py: element-wise and head-wise,
    // with and without the gate's bias, causal, cross-attention, and Qwen's gated q_proj (whose
    // gradient comes back interleaved as grad.q_proj.weight)
    constexpr double forward_tolerance = 1e-5;  // the output, max abs difference
    const std::vector<test::FixtureCase> cases = test::read_cases("data/grad_gate_cases.txt");
    REQUIRE(cases.size() == 5);
    const std::string form = GENERATE(as<std::string>{}, "", " --fused-qkv", " --per-head",
                                      " --attention streaming");
    for (const test::FixtureCase& c : cases) {
        const std::string dir = "data/grad_gate/" + c.name + "/";
        if (form == " --fused-qkv" && test::exists(dir + "key.npy")) continue;
        SECTION(c.name + form) {
            check_saved(dir, c.name, c.options + form);
            const std::string saved = test::temp_path("gate-" + c.name + ".npz");
            const test::RunResult run = test::run_mha(test::fixture_options(dir) + " " +
                                                      c.options + form + " --save " + saved +
                                                      " > /dev/null");
            REQUIRE(run.status == 0);
            const Arrays actual = mha::npy::read_npz(saved);
            std::remove(saved.c_str());
            test::require_close(
                mha::npy::to_tensor(actual.at("output")),
                mha::npy::to_tensor(mha::npy::read_npz(dir + "expected.npz").at("output")),
                forward_tolerance);
        }
    }
}

TEST_CASE("--gate decodes token by token as the causal pass computes", "[gate]") {
    const std::string dir = "data/grad_gate/elementwise_no_bias_causal/";
    const std::string saved = test::temp_path("gate-decode.npz");
    const test::RunResult run = test::run_mha(test::fixture_options(dir) +
                                              " --heads 2 --gate elementwise --decode 5 --save " +
                                              saved + " > /dev/null");
    REQUIRE(run.status == 0);
    const Arrays actual = mha::npy::read_npz(saved);
    std::remove(saved.c_str());
    test::require_close(mha::npy::to_tensor(actual.at("output")),
                        mha::npy::to_tensor(mha::npy::read_npz(dir + "expected.npz").at("output")),
                        1e-5);
}

TEST_CASE("--gate: a state dict and --gate must agree; --form mla refuses a gate", "[gate]") {
    const std::string dir = "data/grad_gate/headwise/";
    CHECK_THAT(test::run_mha(test::fixture_options(dir) + " --heads 2 2>&1").output,
               Catch::Contains("has a gate of 2 rows"));
    CHECK_THAT(test::run_mha(test::fixture_options(dir) + " --heads 2 --gate elementwise 2>&1")
                   .output,
               Catch::Contains("--gate elementwise needs (h·d_k, d_model) = (8, 8)"));
    CHECK_THAT(test::run_mha("-d 8 -H 2 --form mla --gate headwise 2>&1").output,
               Catch::Contains("so no --gate"));
    CHECK_THAT(test::run_mha(test::fixture_options("data/grad_gate/qwen_q_proj/") + " 2>&1").output,
               Catch::Contains("give --heads"));
}

}  // namespace test_backward_torch
