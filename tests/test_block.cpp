// The transformer block: LayerNorm and GELU by hand, the order of the steps in
// pre- and post-LN, the state-dict namings and the block's errors. Parity with
// nn.TransformerEncoderLayer is in test_parity.cpp (cases block_pre, block_post).

#include <catch2/catch.hpp>

#include "core/layers/gelu.h"
#include "core/layers/layer_norm.h"
#include "core/forms/block.h"
#include "core/ops/block_ops.h"
#include "helpers.h"
#include "io/block_weights.h"
#include "io/init.h"
#include "io/weights.h"
#include "recorder.h"

namespace test_block {

using mha::Shape;
using mha::Tensor;

namespace {

constexpr double hand_tolerance = 1e-5;  // hand arithmetic kept to 6 digits

std::vector<std::string> step_names(const test::Recorder& rec) {
    std::vector<std::string> names;
    for (const mha::Step& s : rec.steps) {
        if (s.number >= 14) names.push_back(std::to_string(s.number) + " " + s.name);
    }
    return names;
}

}  // namespace

TEST_CASE("LayerNorm and GELU by hand") {
    // Row [1, 2, 3]: mean 2, biased variance 2/3; 1/sqrt(2/3 + 1e-5) = 1.2247357,
    // so [-1.2247357, 0, 1.2247357], then * gamma [1, 2, 0.5] + beta [0, 1, -1].
    const Tensor x({1, 3}, {1, 2, 3});
    const Tensor y = mha::layer_norm(x, Tensor({3}, {1, 2, 0.5f}), Tensor({3}, {0, 1, -1}));
    test::require_close(y, Tensor({1, 3}, {-1.2247357f, 1.0f, -0.3876322f}), hand_tolerance);
    // GELU(u) = u/2 (1 + erf(u/sqrt 2)): erf(1/sqrt 2) = 0.6826895, so GELU(1) = 0.8413447
    // and GELU(-1) = -0.1586553; GELU(0) = 0.
    const Tensor g = mha::gelu(Tensor({3}, {1, -1, 0}));
    test::require_close(g, Tensor({3}, {0.8413447f, -0.1586553f, 0.0f}), hand_tolerance);
    CHECK(mha::add(Tensor({2}, {1, 2}), Tensor({2}, {3, 5}), 1).to_vector() ==
          std::vector<float>{4, 7});
}

TEST_CASE("the block's steps come in the order the LayerNorm placement gives") {
    const std::size_t E = 8, d_ff = 20;
    const mha::Weights attention = mha::seeded_weights(E, true, true, 1);
    const mha::BlockWeights block = mha::seeded_block(E, d_ff, 1);
    const mha::Inputs in = mha::seeded_inputs({2, 3, 3, E, E, E, 2, 2, E / 2}, true, 1);
    mha::ForwardOptions options;
    options.heads = 2;
    test::Recorder pre, post;
    const mha::ForwardResult a =
        mha::forward_block(attention, block, mha::BlockKind::Pre, in, {}, options, pre);
    mha::forward_block(attention, block, mha::BlockKind::Post, in, {}, options, post);
    CHECK(pre.steps.front().name == "layer_norm");  // pre-LN normalises before attention
    CHECK(step_names(pre) == std::vector<std::string>{"15 layer_norm", "14 project", "16 residual",
                                                      "17 layer_norm", "18 linear1", "19 gelu",
                                                      "20 linear2", "21 residual"});
    CHECK(step_names(post) == std::vector<std::string>{"14 project", "15 residual", "16 layer_norm",
                                                       "17 linear1", "18 gelu", "19 linear2",
                                                       "20 residual", "21 layer_norm"});
    CHECK(pre.find(18).shape == Shape{2, 3, d_ff});
    CHECK(pre.find(18).macs == 2 * 3 * d_ff * E);
    CHECK(a.output.shape() == Shape{2, 3, E});
    CHECK(block.parameter_count() == 4 * E + 2 * E * d_ff + d_ff + E);
}

TEST_CASE("a block state dict: both namings, and what is refused") {
    const auto arrays = mha::npy::read_npz("data/parity/block_pre/weights.npz");
    const mha::BlockState torch = mha::block_from_state_dict(arrays, "torch.npz");
    CHECK(torch.block.d_ff() == 32);
    CHECK(torch.attention.d_model() == 16);
    const mha::BlockState scratch = mha::block_from_state_dict(
        mha::npy::read_npz("data/parity/scratch_block_causal/weights.npz"), "scratch.npz");
    CHECK(scratch.block.d_ff() == 24);

    auto extra = arrays;
    extra.emplace("norm3.weight", arrays.at("norm1.weight"));
    REQUIRE_THROWS_WITH(mha::block_from_state_dict(extra, "x.npz"),
                        Catch::Contains("unexpected array 'norm3.weight'"));
    auto missing = arrays;
    missing.erase("norm2.bias");
    REQUIRE_THROWS_WITH(mha::block_from_state_dict(missing, "x.npz"),
                        Catch::Contains("missing array 'norm2.bias'"));
    REQUIRE_THROWS_WITH(mha::block_from_state_dict(
                            mha::npy::read_npz("data/parity/self_bias/weights.npz"), "a.npz"),
                        Catch::Contains("not a transformer block's state dict"));
    // a block inside a model: the error names the prefix, and --weights-prefix reads it
    std::map<std::string, mha::npy::Array> model;
    for (const auto& [name, array] : arrays) model.emplace("encoder.layers.0." + name, array);
    REQUIRE_THROWS_WITH(mha::block_from_state_dict(model, "m.npz"),
                        Catch::EndsWith("; a block is under 'encoder.layers.0.': add "
                                        "--weights-prefix encoder.layers.0."));
    CHECK(mha::block_from_state_dict(mha::under_prefix(model, "encoder.layers.0.", "m.npz", {}),
                                     "m.npz")
              .block.d_ff() == 32);
}

TEST_CASE("--block on the command line") {
    const test::RunResult r = test::run_mha("--block post -n 3 -d 8 -H 2 --d-ff 12 --trace");
    REQUIRE(r.status == 0);
    CHECK_THAT(r.output,
               Catch::Contains("post-LN block, d_ff=12") &&
                   Catch::Contains("parameters: 532") &&  // 4·8² + 4·8 + 4·8 + 2·8·12 + 12 + 8
                   Catch::Contains("(B=2, N=3, d_ff=12)") &&
                   Catch::Contains("parameters: W_1 (d_ff, d_model) and b_1, 108") &&
                   Catch::Contains("parameters: gamma and beta, 2·d_model = 16") &&
                   Catch::Contains("out = norm2(out)"));
    const auto [args, message] = GENERATE(table<std::string, std::string>({
        {"--d-ff 64", "--d-ff sets the feed-forward width of --block"},
        {"--block sideways", "--block expects one of post, pre, got 'sideways'"},
        {"--block pre --per-head", "choose one"},
        {"--block pre -m 4", "--block is self-attention"},
        {"--block pre --weights data/parity/self_bias/weights.npz",
         "not a transformer block's state dict"},
        {"--block pre --heads 4 --weights data/parity/block_pre/weights.npz --d-ff 64",
         "--d-ff 64 disagrees with data/parity/block_pre/weights.npz, which has d_ff=32"},
        {"--block pre -n 64 -d 64 --d-ff 100000000", "more than --max-memory"},
    }));
    CAPTURE(args);
    const test::RunResult bad = test::run_mha(args);
    CHECK(bad.status == 2);
    CHECK_THAT(bad.output, Catch::StartsWith("mha: error: ") && Catch::Contains(message));
}

}  // namespace test_block
