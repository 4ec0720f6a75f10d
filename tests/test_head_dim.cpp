// Heads of another width than d_model / h (--head-dim), the scale's base (--scale-base)
// and the Gemma 2 presets that use both: by hand, through the CLI, and refused where they
// cannot go (tests/test_shapes.cpp checks shapes-only against computed).

#include <catch2/catch.hpp>
#include <cmath>
#include <regex>

#include "core/pass/attention.h"
#include "helpers.h"
#include "io/init.h"

namespace test_head_dim {

namespace {

// The text with every run of white space as one space: notes wrap at any space.
std::string one_line(const std::string& text) {
    return std::regex_replace(text, std::regex("\\s+"), " ");
}

mha::Tensor matrix(mha::Shape shape, std::vector<float> values) {
    return mha::Tensor(std::move(shape), std::move(values));
}

}  // namespace

TEST_CASE("one head of width 1 in a d_model of 2, scaled by 1/sqrt(4): the arithmetic by hand",
          "[head-dim]") {
    // x = [[1, 0], [0, 1]] (B=1, N=2, d_model=2), h=1, d_k=1, no bias:
    // W_q = W_k = [[1, 0]] (1, 2), W_v = [[0, 1]], W_o = [[1], [2]] (2, 1).
    // Q = K = [[1], [0]], V = [[0], [1]]; scores = Q Kᵀ = [[1, 0], [0, 0]];
    // scale base S = 4: scores / 2 = [[0.5, 0], [0, 0]]
    // softmax row 0: [e^0.5, 1] / (e^0.5 + 1) = [1.64872, 1] / 2.64872 = [0.62246, 0.37754]
    // softmax row 1: [0.5, 0.5]
    // context = weights V = [[0.37754], [0.5]]; output = context W_oᵀ = [[0.37754, 0.75508], [0.5,
    // 1]]
    mha::Weights w;
    w.w_q = matrix({1, 2}, {1, 0});
    w.w_k = matrix({1, 2}, {1, 0});
    w.w_v = matrix({1, 2}, {0, 1});
    w.w_o = matrix({2, 1}, {1, 2});
    const mha::Tensor x = matrix({1, 2, 2}, {1, 0, 0, 1});
    mha::ForwardOptions options;
    options.heads = 1;
    options.scale_base = 4.0;
    mha::NullTracer none;
    const mha::ForwardResult r = mha::forward(w, {x, x, x}, mha::Masks{}, options, none);
    const std::vector<float> weights = r.weights.to_vector(), output = r.output.to_vector();
    const std::vector<float> expected_weights = {0.62246f, 0.37754f, 0.5f, 0.5f};
    const std::vector<float> expected_output = {0.37754f, 0.75508f, 0.5f, 1.0f};
    for (std::size_t i = 0; i < 4; ++i) {
        CHECK(weights[i] == Approx(expected_weights[i]).margin(1e-5));
        CHECK(output[i] == Approx(expected_output[i]).margin(1e-5));
    }
}

TEST_CASE("the step-7 note names the scale's base and the d_k it replaces", "[head-dim]") {
    const test::RunResult r =
        test::run_mha("-d 16 -H 2 --head-dim 12 --scale-base 144 -n 3 -b 1 --trace");
    REQUIRE(r.status == 0);
    CHECK_THAT(one_line(r.output),
               Catch::Contains("d_model=16 h=2 d_k=12") &&
                   Catch::Contains("1/sqrt(S) = 1/sqrt(144) = 0.0833333") &&
                   Catch::Contains("replaces d_k = 12") &&
                   Catch::Contains("concat = context.view(B, N, h·d_k)") &&
                   Catch::Contains("scores / math.sqrt(query_pre_attn_scalar)"));
    const test::RunResult json = test::run_mha("-d 16 -H 2 --head-dim 12 -n 3 --format json");
    REQUIRE(json.status == 0);
    CHECK_THAT(one_line(json.output), Catch::Contains("\"d_k\":12"));
    const test::RunResult md =
        test::run_mha("-d 16 -H 2 --head-dim 12 -n 3 --shapes-only --format markdown");
    REQUIRE(md.status == 0);
    CHECK_THAT(one_line(md.output), Catch::Contains("d_k=12"));
}

TEST_CASE("--head-dim equal to d_model / h changes nothing", "[head-dim]") {
    // the traces without their wall-time line, which differs from run to run
    const std::regex timing("wall time: [^\n]*");
    const std::string plain =
        std::regex_replace(test::run_mha("-d 16 -H 4 -n 3 --trace --values").output, timing, "");
    const std::string given = std::regex_replace(
        test::run_mha("-d 16 -H 4 -n 3 --trace --values --head-dim 4").output, timing, "");
    CHECK(plain.size() > 1000);
    CHECK(plain == given);
}

TEST_CASE("the Gemma 2 presets: head width, scale base, soft-cap, RoPE and the layer kind",
          "[head-dim][preset]") {
    // gemma2-2b: W_q, W_o 2048·2304 each (h·d_k = 8·256), W_k, W_v 1024·2304 (G·d_k = 4·256),
    // no bias: 2304·(2·2048 + 2·1024) = 14,155,776 parameters
    const test::RunResult small = test::run_mha("--preset gemma2-2b --shapes-only --trace");
    REQUIRE(small.status == 0);
    CHECK_THAT(one_line(small.output),
               Catch::Contains("d_model=2304 h=8 d_k=256 G=4") && Catch::Contains("14,155,776") &&
                   Catch::Contains("a global layer (--layer L: even L are local)") &&
                   Catch::Contains("1/sqrt(S) = 1/sqrt(256)") &&
                   Catch::Contains("soft-cap: scores = 50·tanh(scores / 50)") &&
                   Catch::Contains("rotate_half"));
    const test::RunResult local =
        test::run_mha("--preset gemma2-9b --layer 0 --shapes-only --trace");
    REQUIRE(local.status == 0);
    CHECK_THAT(one_line(local.output), Catch::Contains("d_model=3584 h=16 d_k=256 G=8") &&
                                           Catch::Contains("local layer 0 (sliding window 4096)") &&
                                           Catch::Contains("sliding window W = 4096"));
    const test::RunResult global =
        test::run_mha("--preset gemma2-27b --layer 45 --shapes-only --trace");
    REQUIRE(global.status == 0);
    CHECK_THAT(one_line(global.output), Catch::Contains("d_model=4608 h=32 d_k=128 G=16") &&
                                            Catch::Contains("global layer 45") &&
                                            Catch::Contains("1/sqrt(S) = 1/sqrt(144)") &&
                                            !Catch::Contains("sliding window W ="));
    const test::RunResult computed = test::run_mha("--preset gemma2-2b --layer 2 -n 3 --trace");
    REQUIRE(computed.status == 0);
    CHECK_THAT(one_line(computed.output), Catch::Contains("local layer 2 (sliding window 4096)"));
}

TEST_CASE("--head-dim refuses the forms that cannot take it", "[head-dim]") {
    const auto [args, message] = GENERATE(table<std::string, std::string>({
        {"--head-dim 8 --form mla", "--form mla is DeepSeek-V2's latent attention"},
        {"--scale-base 4 --no-scale", "choose one"},
        {"--preset gemma2-2b --layer 26 --shapes-only", "the layers are 0..25"},
        {"--preset llama2-7b --layer 1 --shapes-only", "all compute the same attention"},
        {"--weights data/parity/gqa/weights.npz -H 4 --head-dim 7", "--head-dim 7 disagrees with"},
    }));
    test::check_rejected(args, message);
}

TEST_CASE("--summary states the scale step 7 used: 1/sqrt(S) under --scale-base", "[head-dim]") {
    // d_k = 12, S = 2: the softmax sees the variance of q·k divided by S = 2, not by d_k = 12
    const test::RunResult r =
        test::run_mha("-d 16 -H 2 --head-dim 12 --scale-base 2 -n 16 --summary");
    REQUIRE(r.status == 0);
    const std::string text = one_line(r.output);
    std::smatch m;
    REQUIRE(std::regex_search(
        text, m,
        std::regex(
            R"(variance ([0-9.]+) from q·k \(d_k = 12\), ([0-9.]+) after / sqrt\(S\) with S = 2 \(--scale-base, in place of d_k\))")));
    const double raw = std::stod(m[1]), after = std::stod(m[2]);
    CHECK(raw > 1.0);
    CHECK(after == Approx(raw / 2.0).margin(0.01));  // both printed to 2 decimals
    // the soft-cap line: the largest |q·k| / sqrt(S) before C·tanh(s/C), the largest after
    const test::RunResult capped =
        test::run_mha("-d 16 -H 2 --head-dim 12 --scale-base 2 --softcap 2 -n 16 --summary");
    REQUIRE(capped.status == 0);
    const std::string capped_text = one_line(capped.output);
    REQUIRE(std::regex_search(
        capped_text, m,
        std::regex(R"(largest \|score\| was ([0-9.]+) before C·tanh\(s/C\) and ([0-9.]+) after)")));
    const double before = std::stod(m[1]), bounded = std::stod(m[2]);
    CHECK(bounded == Approx(2.0 * std::tanh(before / 2.0)).margin(2e-3));  // printed to 3 decimals
}

TEST_CASE("the header counts the projections of heads of another width", "[head-dim]") {
    // d_model 16, h 2, d_k 12: W_q (24, 16), W_o (16, 24), W_k and W_v (24, 16), 384 each;
    // biases 24 + 24 + 24 + 16 = 88: 4·384 + 88 = 1,624; per head 12·16 = 192 of W_q and W_o
    const test::RunResult r = test::run_mha("-d 16 -H 2 --head-dim 12 -n 3 -b 1");
    REQUIRE(r.status == 0);
    CHECK_THAT(one_line(r.output),
               Catch::Contains("parameters: 1,624") &&
                   Catch::Contains("per projection: W_q (24, 16) = 384, W_o (16, 24) = 384, W_k "
                                   "(24, 16) = 384, W_v (24, 16) = 384 (+ bias)") &&
                   Catch::Contains("per head: d_k·d_model = 12·16 = 192 of each of W_q and W_o"));
}

}  // namespace test_head_dim
