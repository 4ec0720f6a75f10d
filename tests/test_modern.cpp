// The modern attention features' core maths (RoPE, ALiBi, windows and sinks, soft-cap,
// RMSNorm, MLA) against tests/data/modern (make_modern_fixtures.py) and hand-computed cases.

#include <algorithm>
#include <cmath>
#include <limits>
#include <regex>

#include "app/classroom/quiz_questions.h"
#include "core/error.h"
#include "core/forms/mla_pass.h"
#include "core/kernels/kernels.h"
#include "core/kernels/streaming.h"
#include "core/ops/rms_norm.h"
#include "core/ops/softcap.h"
#include "core/pass/flash_row.h"
#include "core/pass/mla.h"
#include "core/position/position_bias.h"
#include "core/position/rope.h"
#include "helpers.h"
#include "io/init.h"
#include "io/npy.h"
#include "io/weights.h"

namespace test_modern {

namespace {

constexpr double weights_tolerance = 1e-5;  // attention weights and per-element maths
constexpr double output_tolerance = 1e-4;   // layer outputs

using Arrays = std::map<std::string, mha::npy::Array>;

Arrays unit(const std::string& topic) {
    return mha::npy::read_npz("data/modern/units/" + topic + ".npz");
}

mha::Tensor tensor(const Arrays& arrays, const std::string& name) {
    return mha::npy::to_tensor(arrays.at(name));
}

std::vector<float> random_values(std::size_t count, std::uint32_t stream, float scale) {
    mha::Random random(14, stream);
    std::vector<float> values(count);
    for (float& v : values) v = random.uniform(-scale, scale);
    return values;
}

// The modern parts of step 7-8 one at a time, each from its own core function.
struct ScoreMods {
    double cap = 0.0, slope = 0.0;
    std::size_t window = 0, sinks = 0;
    bool causal = false;
};

// ALiBi's slopes for h = 4 heads: head 0's is 2^(-8/4) = 0.25, the slope the mods use.
constexpr std::size_t alibi_heads = 4;

mha::Masks masks_of(const ScoreMods& mods) {
    mha::Masks masks;
    masks.causal = mods.causal;
    masks.softcap = mods.cap;
    masks.alibi = mods.slope != 0.0;
    masks.window = mods.window;
    masks.sinks = mods.sinks;
    return masks;
}

// Head 0's view of masks for n queries and m keys.
mha::HeadMask head_mask(const mha::Masks& masks, std::size_t n, std::size_t m) {
    return mha::unit_mask(masks, 0, 0, mha::Sizes{1, n, m, 1, 1, 1, alibi_heads, alibi_heads, 1});
}

// The trace with its wrapped note lines joined: every run of white space becomes one space.
std::string one_line(const std::string& text) {
    return std::regex_replace(text, std::regex("\\s+"), " ");
}

ScoreMods generated_mods() {
    ScoreMods mods;
    mods.cap = GENERATE(0.0, 1.5);
    mods.slope = GENERATE(0.0, 0.25);
    const int kind = GENERATE(0, 1, 2, 3);  // none, causal, window 3, window 40 with 2 sinks
    mods.causal = kind == 1;
    mods.window = kind == 2 ? 3 : kind == 3 ? 40 : 0;
    mods.sinks = kind == 3 ? 2 : 0;
    return mods;
}

}  // namespace

TEST_CASE("RoPE matches the fixtures in both layouts, thetas and offsets", "[modern][rope]") {
    const Arrays f = unit("rope");
    const auto [layout, name] =
        GENERATE(std::make_pair(mha::RopeLayout::Half, std::string("half")),
                 std::make_pair(mha::RopeLayout::Interleaved, std::string("interleaved")));
    const auto [theta, first, suffix] =
        GENERATE(std::make_tuple(10000.0, 0, std::string("")),
                 std::make_tuple(500.0, 0, std::string("_theta500")),
                 std::make_tuple(10000.0, 3, std::string("_from3")));
    CAPTURE(name, suffix);
    mha::Tensor x = tensor(f, "x").contiguous();  // (2, 3, 5, 8) = (B, h, L, d_k)
    mha::apply_rope(x, {layout, theta}, std::size_t(first));
    test::require_close(x, tensor(f, name + suffix), weights_tolerance);
}

TEST_CASE("RoPE rotates a strided tensor in place", "[modern][rope]") {
    const Arrays f = unit("rope");
    // (B, L, h, d_k) storage seen as (B, h, L, d_k), as the split into heads leaves Q
    mha::Tensor x = tensor(f, "x").transpose(1, 2).contiguous().transpose(1, 2);
    REQUIRE_FALSE(x.is_contiguous());
    mha::apply_rope(x, {mha::RopeLayout::Half, 10000.0}, 0);
    test::require_close(x.contiguous(), tensor(f, "half"), weights_tolerance);
}

TEST_CASE("RoPE by hand: d_k = 2, position 1 turns (1, 0) by one radian", "[modern][rope]") {
    // inv_freq = [10000^0] = [1], so position 1 rotates the pair by 1 rad: (cos 1, sin 1);
    // position 0 leaves the row alone.
    mha::Tensor x({1, 1, 2, 2}, {1.0f, 0.0f, 1.0f, 0.0f});
    mha::apply_rope(x, {mha::RopeLayout::Interleaved, 10000.0}, 0);
    CHECK(x.at({0, 0, 0, 0}) == 1.0f);
    CHECK(x.at({0, 0, 0, 1}) == 0.0f);
    CHECK(x.at({0, 0, 1, 0}) == Approx(std::cos(1.0)).margin(1e-7));
    CHECK(x.at({0, 0, 1, 1}) == Approx(std::sin(1.0)).margin(1e-7));
    // d_k = 4, T = 100: inv_freq = [100^0, 100^(-2/4)] = [1, 0.1]
    const std::vector<double> inv_freq = mha::rope_inv_freq(4, 100.0);
    REQUIRE(inv_freq.size() == 2);
    CHECK(inv_freq[0] == 1.0);
    CHECK(inv_freq[1] == Approx(0.1).epsilon(1e-12));
    CHECK(mha::rope_pair(mha::RopeLayout::Half, 8, 1) ==
          std::make_pair(std::size_t(1), std::size_t(5)));
    CHECK(mha::rope_pair(mha::RopeLayout::Interleaved, 8, 1) ==
          std::make_pair(std::size_t(2), std::size_t(3)));
}

TEST_CASE("RoPE refuses an odd d_k", "[modern][rope]") {
    mha::Tensor x({1, 1, 2, 3});
    REQUIRE_THROWS_WITH(mha::apply_rope(x, {}, 0), "RoPE needs an even d_k, got 3");
}

TEST_CASE("RoPE's layouts are one permutation of the weights' rows apart", "[modern][rope]") {
    const Arrays f = unit("rope");
    // the fixture permutes with Hugging Face's conversion: view(h, d_k/2, 2, in).transpose(1, 2)
    const mha::Tensor w_half =
        mha::reorder_head_rows(tensor(f, "w_interleaved"), 2, mha::rope_half_order(8));
    test::require_close(w_half, tensor(f, "w_half"), 0.0);
    CHECK(mha::rope_half_order(4) == std::vector<std::size_t>{0, 2, 1, 3});
    // rotating the permuted features the half way = permuting the interleaved rotation
    const mha::Tensor x = tensor(f, "x");  // (2, 3, 5, 8)
    const std::vector<std::size_t> order = mha::rope_half_order(8);
    mha::Tensor permuted = mha::reorder_head_rows(x.view({30, 8}).transpose(0, 1), 1, order)
                               .transpose(0, 1)
                               .contiguous()
                               .view({2, 3, 5, 8});
    mha::apply_rope(permuted, {mha::RopeLayout::Half, 10000.0}, 0);
    const mha::Tensor expected =
        mha::reorder_head_rows(tensor(f, "interleaved").view({30, 8}).transpose(0, 1), 1, order)
            .transpose(0, 1)
            .contiguous()
            .view({2, 3, 5, 8});
    test::require_close(permuted, expected, weights_tolerance);
}

TEST_CASE("ALiBi slopes follow Press et al. for h a power of two and not", "[modern][alibi]") {
    const Arrays f = unit("alibi");
    for (std::size_t h : {1, 4, 6, 8, 12}) {
        CAPTURE(h);
        const std::vector<double> slopes = mha::alibi_slopes(h);
        const std::vector<float> expected = tensor(f, "slopes_h" + std::to_string(h)).to_vector();
        REQUIRE(slopes.size() == h);
        for (std::size_t i = 0; i < h; ++i) CHECK(slopes[i] == Approx(expected[i]).epsilon(1e-7));
    }
    // by hand, h = 6: the 4 slopes of h = 4, 2^-2 .. 2^-8, then slopes 0 and 2 of h = 8: 2^-1, 2^-3
    const std::vector<double> six = mha::alibi_slopes(6);
    CHECK(six == std::vector<double>{0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125});
}

TEST_CASE("ALiBi bias on a (N, M) grid whose queries are the last N positions", "[modern][alibi]") {
    const Arrays f = unit("alibi");
    const mha::Tensor expected = tensor(f, "bias_h6_n4_m6");  // (h, N, M) = (6, 4, 6)
    const std::vector<double> slopes = mha::alibi_slopes(6);
    mha::Tensor bias({6, 4, 6});
    for (std::size_t h = 0; h < 6; ++h) {
        mha::add_alibi({bias.data() + h * 24, 4, 6, 6, 2, 0}, slopes[h]);
    }
    test::require_close(bias, expected, weights_tolerance);
    // a tile of keys 3..5 for query rows 1..2 (positions 3, 4) of head 0 (slope 1/4):
    // -|3-3|/4 = 0, -|3-4|/4 = -0.25, -|3-5|/4 = -0.5; -|4-3|/4 = -0.25, 0, -0.25
    float tile[6] = {};
    mha::add_alibi({tile, 2, 3, 3, 3, 3}, 0.25);
    CHECK(std::vector<float>(tile, tile + 6) ==
          std::vector<float>{0, -0.25f, -0.5f, -0.25f, 0, -0.25f});
}

TEST_CASE("the sliding window keeps p - W < j <= p and the first S keys", "[modern][window]") {
    const Arrays f = unit("window");
    struct Case {
        const char* name;
        std::size_t n, m, w, s;
    };
    for (const Case c : {Case{"w1", 6, 6, 1, 0}, Case{"w3", 6, 6, 3, 0}, Case{"w8", 6, 6, 8, 0},
                         Case{"w3_s2", 7, 7, 3, 2}, Case{"w2_n2_m6", 2, 6, 2, 0},
                         Case{"w2_s1_n2_m6", 2, 6, 2, 1}}) {
        CAPTURE(c.name);
        mha::Tensor scores({c.n, c.m});
        mha::apply_window({scores.data(), c.n, c.m, c.m, c.m - c.n, 0}, {c.w, c.s});
        const std::vector<float> keep = tensor(f, c.name).to_vector();
        const std::vector<float> got = scores.to_vector();
        for (std::size_t i = 0; i < got.size(); ++i) {
            CAPTURE(i);
            CHECK((got[i] == 0.0f) == (keep[i] == 1.0f));
            CHECK((got[i] == 0.0f || got[i] == -std::numeric_limits<float>::infinity()));
        }
    }
}

TEST_CASE("the KV cache of a window holds the last W and the first S positions",
          "[modern][window]") {
    CHECK(mha::window_cache_positions({3, 0}, 10) == 3);    // positions 7, 8, 9
    CHECK(mha::window_cache_positions({3, 2}, 10) == 5);    // 0, 1 and 7, 8, 9
    CHECK(mha::window_cache_positions({3, 2}, 4) == 4);     // 0 and 1, 2, 3: all of them
    CHECK(mha::window_cache_positions({16, 4}, 10) == 10);  // W ≥ M: the whole sequence
    CHECK(mha::window_allows({3, 2}, 9, 1));
    CHECK_FALSE(mha::window_allows({3, 2}, 9, 6));
    CHECK_FALSE(mha::window_allows({3, 2}, 0, 1));  // a sink is still never in the future
}

TEST_CASE("soft-capping matches the fixture and stays inside (-C, C)", "[modern][softcap]") {
    const Arrays f = unit("softcap");
    for (const auto& [cap, name] : {std::make_pair(5.0, "cap5"), std::make_pair(50.0, "cap50")}) {
        mha::Tensor s = tensor(f, "scores").contiguous();
        mha::softcap(s.data(), s.numel(), cap);
        test::require_close(s, tensor(f, name), weights_tolerance * cap);
        for (float v : s.to_vector()) CHECK(std::fabs(v) <= cap);
    }
    // by hand: 2·tanh(1/2) = 0.924234..., and 0 stays 0
    float v[2] = {1.0f, 0.0f};
    mha::softcap(v, 2, 2.0);
    CHECK(v[0] == Approx(0.9242343145).epsilon(1e-7));
    CHECK(v[1] == 0.0f);
}

TEST_CASE("RMSNorm of each row matches the fixture, strided too", "[modern][qk-norm]") {
    const Arrays f = unit("rms_norm");
    mha::Tensor x = tensor(f, "x").transpose(1, 2).contiguous().transpose(1, 2);  // (2, 3, 4, 8)
    mha::rms_norm_rows(x, tensor(f, "weight"));
    test::require_close(x.contiguous(), tensor(f, "out"), weights_tolerance);
    // by hand: (3, 4) has mean square 12.5, so it becomes (3, 4) / sqrt(12.5 + 1e-6) · (1, 2)
    mha::Tensor row({1, 2}, {3.0f, 4.0f});
    mha::rms_norm_rows(row, mha::Tensor({2}, {1.0f, 2.0f}));
    CHECK(row.at({0, 0}) == Approx(3.0 / std::sqrt(12.5 + 1e-6)).epsilon(1e-7));
    CHECK(row.at({0, 1}) == Approx(8.0 / std::sqrt(12.5 + 1e-6)).epsilon(1e-7));
}

namespace {

// The options of an MLA pass with h heads and DeepSeek-V2's RoPE (half layout, base 10000).
mha::ForwardOptions mla_options(std::size_t heads) {
    mha::ForwardOptions options;
    options.heads = heads;
    options.rope = mha::Rope{mha::RopeLayout::Half, 10000.0};
    return options;
}

mha::Masks causal_masks(bool causal) {
    mha::Masks masks;
    masks.causal = causal;
    return masks;
}

mha::MlaWeights mla_fixture_weights() {
    const Arrays sd = mha::npy::read_npz("data/modern/mla_causal/weights.npz");
    mha::MlaWeights w;
    w.w_q = tensor(sd, "q_proj.weight");
    w.w_kv_a = tensor(sd, "kv_a_proj_with_mqa.weight");
    w.kv_norm = tensor(sd, "kv_a_layernorm.weight");
    w.w_kv_b = tensor(sd, "kv_b_proj.weight");
    w.w_o = tensor(sd, "o_proj.weight");
    return w;
}

}  // namespace

TEST_CASE("MLA, naive and absorbed, matches a from-scratch PyTorch module", "[modern][mla]") {
    const mha::MlaWeights w = mla_fixture_weights();
    const Arrays expected = mha::npy::read_npz("data/modern/mla_causal/expected.npz");
    const mha::Tensor x =
        mha::npy::to_tensor(mha::npy::read_npy("data/modern/mla_causal/query.npy"));
    const mha::MlaSizes s = mha::mla_sizes(w, 2);
    // the fixture's sizes: d_model, h, d_h, d_R, d_c, d_v
    CHECK(std::vector<float>{float(s.d_model), float(s.heads), float(s.d_nope), float(s.d_rope),
                             float(s.d_latent),
                             float(s.d_v)} == tensor(expected, "sizes").to_vector());
    const mha::MlaForm form = GENERATE(mha::MlaForm::Naive, mha::MlaForm::Absorbed);
    CAPTURE(form == mha::MlaForm::Naive ? "naive" : "absorbed");
    const mha::MlaResult r = mha::mla_forward(w, x, causal_masks(true), mla_options(2), form);
    test::require_close(r.weights, tensor(expected, "attn_weights"), weights_tolerance);
    test::require_close(r.output, tensor(expected, "output"), output_tolerance);
    CHECK(r.latent.shape() == mha::Shape{2, 5, 6});
    CHECK(r.rope_key.shape() == mha::Shape{2, 5, 2});
}

TEST_CASE("MLA's two forms agree with each other closely", "[modern][mla]") {
    const mha::MlaWeights w = mla_fixture_weights();
    const mha::Tensor x =
        mha::npy::to_tensor(mha::npy::read_npy("data/modern/mla_causal/query.npy"));
    const mha::MlaResult naive = mha::mla_forward(w, x, {}, mla_options(2), mha::MlaForm::Naive);
    const mha::MlaResult absorbed =
        mha::mla_forward(w, x, {}, mla_options(2), mha::MlaForm::Absorbed);
    test::require_close(absorbed.output, naive.output, 1e-5);
    test::require_close(absorbed.weights, naive.weights, 1e-6);
}

TEST_CASE("MLA through the shared pass: streaming, threads, ablation and --no-scale act on it",
          "[modern][mla]") {
    // seeded d_model 64, h 4: d_h = d_v = 16, d_R 8, d_c 32; q and k 24 wide. B 2, N 128:
    // steps 6-10 hold 8 units of 2·128·128·(24 + 16) multiply-adds, enough for 3 threads
    const mha::MlaSizes m = mha::seeded_mla_sizes(64, 4, 32, 8);
    const mha::MlaWeights w = mha::seeded_mla_weights(m, 7);
    const mha::Tensor x = mha::seeded_inputs({2, 128, 128, 64, 64, 64, 4, 4, 16}, true, 7).x_q;
    mha::Masks masks;
    masks.causal = true;
    masks.softcap = 4.0;
    const mha::MlaForm form = GENERATE(mha::MlaForm::Naive, mha::MlaForm::Absorbed);
    CAPTURE(form == mha::MlaForm::Naive ? "naive" : "absorbed");
    mha::ForwardOptions options = mla_options(4);
    const mha::MlaResult standard = mha::mla_forward(w, x, masks, options, form);
    SECTION("streaming gives the standard output to float rounding, and keeps no weights") {
        options.path = mha::AttentionPath::Streaming;
        const mha::MlaResult streamed = mha::mla_forward(w, x, masks, options, form);
        CHECK(streamed.weights.empty());
        test::require_close(streamed.output, standard.output, weights_tolerance);
    }
    SECTION("1 and 3 threads give the same bits") {
        options.threads = 3;
        const mha::MlaResult threaded = mha::mla_forward(w, x, masks, options, form);
        CHECK(threaded.output.to_vector() == standard.output.to_vector());
        CHECK(threaded.weights.to_vector() == standard.weights.to_vector());
    }
    SECTION("ablating a head is W_o without that head's columns") {
        options.ablate_head = 2;
        const mha::MlaResult ablated = mha::mla_forward(w, x, masks, options, form);
        mha::MlaWeights without = w;  // o_proj's columns 2·16 .. 3·16 − 1 zeroed
        without.w_o = mha::Tensor(w.w_o.shape(), w.w_o.to_vector());
        for (std::size_t row = 0; row < 64; ++row) {
            std::fill_n(without.w_o.data() + row * 64 + 32, 16, 0.0f);
        }
        const mha::MlaResult expected = mha::mla_forward(without, x, masks, mla_options(4), form);
        test::require_close(ablated.output, expected.output, 1e-6);
        CHECK(ablated.output.to_vector() != standard.output.to_vector());
        CHECK(ablated.weights.to_vector() == standard.weights.to_vector());
    }
    SECTION("--no-scale leaves the scores unscaled: a scale of 1/sqrt(1)") {
        options.scale = false;
        const mha::MlaResult unscaled = mha::mla_forward(w, x, masks, options, form);
        mha::ForwardOptions base_one = mla_options(4);
        base_one.scale_base = 1.0;
        const mha::MlaResult one = mha::mla_forward(w, x, masks, base_one, form);
        CHECK(unscaled.weights.to_vector() == one.weights.to_vector());
        CHECK(unscaled.weights.to_vector() != standard.weights.to_vector());
    }
}

TEST_CASE("--form mla with masks, the window and the soft-cap matches PyTorch", "[modern][mla]") {
    // make_modern_fixtures.py mla-masked: causal with an additive attn_mask (-inf in three
    // places) and a key padding mask; causal with --window 2 and --softcap 0.3
    const std::string name = GENERATE("mla_masked", "mla_window_softcap");
    CAPTURE(name);
    const std::string folder = "data/modern/" + name + "/";
    std::string options = test::read_text(folder + "options.txt");
    options.erase(options.find_last_not_of('\n') + 1);
    for (const std::string file : {"mask.npy", "key_padding_mask.npy"}) {
        const std::size_t at = options.find(" " + file);
        if (at != std::string::npos) options.insert(at + 1, folder);
    }
    const Arrays expected = mha::npy::read_npz(folder + "expected.npz");
    const std::string path = test::temp_path("mla_" + name + ".npz");
    const std::string layer = "--form mla --weights " + folder + "weights.npz --input " + folder +
                              "query.npy -H 2 " + options;
    const test::RunResult r = test::run_mha(layer + " --save " + path);
    REQUIRE(r.status == 0);
    const Arrays saved = mha::npy::read_npz(path);
    const mha::Tensor weights = tensor(saved, "attn_weights");
    test::require_close(weights, tensor(expected, "attn_weights"), weights_tolerance);
    test::require_close(tensor(saved, "output"), tensor(expected, "output"), output_tolerance);
    const std::vector<float> got = weights.to_vector();
    const std::vector<float> want = tensor(expected, "attn_weights").to_vector();
    for (std::size_t i = 0; i < got.size(); ++i) {
        if (want[i] == 0.0f) CHECK(got[i] == 0.0f);  // blocked keys get exactly nothing
    }
    std::remove(path.c_str());
    const test::RunResult streamed = test::run_mha(layer + " --attention streaming --trace");
    REQUIRE(streamed.status == 0);
    CHECK_THAT(streamed.output, Catch::Contains("streamed"));
}

TEST_CASE("--form mla takes the views and options every form takes", "[modern][mla][cli]") {
    const std::string mla = "--form mla -d 32 -H 2 -n 6 -b 2 ";
    const test::RunResult ablated = test::run_mha(mla + "--causal=top-left --ablate-head 1");
    REQUIRE(ablated.status == 0);
    CHECK_THAT(ablated.output, Catch::Contains("ablating head 1 (its context zeroed before W_o) "
                                               "changes the output by"));
    // head i's slice of the concat is d_v = 16 wide: columns 16-31 for head 1
    const test::RunResult shares = test::run_mha(mla + "--window 3 --head-contributions");
    REQUIRE(shares.status == 0);
    const std::string text = one_line(shares.output);
    CHECK_THAT(text, Catch::Contains("head 1: columns 16-31"));
    std::smatch found;
    const std::regex difference(R"(= output: largest difference ([0-9.e+-]+))");
    REQUIRE(std::regex_search(text, found, difference));
    CHECK(std::stod(found[1]) <= 1e-5);
    const test::RunResult shapes =
        test::run_mha(mla + "--shapes-only --attention streaming --causal --window 2 --softcap 5");
    REQUIRE(shapes.status == 0);
    CHECK_THAT(one_line(shapes.output),
               Catch::Contains("streamed") && Catch::Contains("(o_proj.weight · W_UV per head)"));
    const test::RunResult unscaled = test::run_mha(mla + "--no-scale --trace");
    REQUIRE(unscaled.status == 0);
    CHECK_THAT(unscaled.output, Catch::Contains("scores  (not scaled)"));
    const std::string one = test::temp_path("mla_threads_1.npz");
    const std::string three = test::temp_path("mla_threads_3.npz");
    const std::string big = "--form mla -d 64 -H 4 -n 128 -b 2 --causal --save ";
    REQUIRE(test::run_mha(big + one + " --threads 1").status == 0);
    REQUIRE(test::run_mha(big + three + " --threads 3").status == 0);
    CHECK(test::read_text(one) == test::read_text(three));
    std::remove(one.c_str());
    std::remove(three.c_str());
}

TEST_CASE("MLA refuses weights that do not fit together", "[modern][mla]") {
    mha::MlaWeights w = mla_fixture_weights();
    REQUIRE_THROWS_WITH(mha::mla_sizes(w, 3), Catch::Contains("do not split into 3 heads"));
    w.w_o = mha::Tensor({16, 7});
    REQUIRE_THROWS_WITH(mha::mla_sizes(w, 2), Catch::Contains("do not fit d_model = 16"));
}

TEST_CASE("the cache ledger: DeepSeek-V2's sizes, numbers per token and layer", "[modern][mla]") {
    // h = 128, d_h = 128, d_R = 64, d_c = 512 (DeepSeek-V2, section 2.1.2 and Table 1)
    const mha::MlaSizes s{5120, 128, 128, 64, 512, 128};
    const mha::CachePerToken c = mha::cache_per_token(s, 8);
    CHECK(c.mha == 2 * 128 * 128);  // 32768
    CHECK(c.gqa == 2 * 8 * 128);    // 2048
    CHECK(c.mqa == 2 * 128);        // 256
    CHECK(c.mla == 512 + 64);  // 576 = 4.5 d_h, the paper's "equivalent to GQA with 2.25 groups"
}

TEST_CASE("scale_mask_softmax applies soft-cap, ALiBi and the window as the core functions do",
          "[modern][kernels]") {
    const ScoreMods mods = generated_mods();
    const std::size_t n = GENERATE(1, 9), m = GENERATE(9, 70);
    CAPTURE(mods.cap, mods.slope, mods.window, mods.sinks, mods.causal, n, m);
    std::vector<float> reference = random_values(n * m, 1, 8.0f), fast = reference;
    const float factor = 0.5f;
    mha::scale(reference.data(), n * m, factor);
    if (mods.cap > 0) mha::softcap(reference.data(), n * m, mods.cap);
    if (mods.slope != 0) mha::add_alibi({reference.data(), n, m, m, m - n, 0}, mods.slope);
    if (mods.causal) mha::apply_causal(reference.data(), n, m);
    if (mods.window > 0)
        mha::apply_window({reference.data(), n, m, m, m - n, 0}, {mods.window, mods.sinks});
    mha::softmax_rows(reference.data(), n, m, false);
    const mha::Masks masks = masks_of(mods);
    mha::scale_mask_softmax(fast.data(), factor, head_mask(masks, n, m), false);
    const test::Difference d = test::max_difference(fast, reference);
    INFO("worst difference " << d.worst << " at " << d.index);
    REQUIRE(d.worst <= weights_tolerance);
}

TEST_CASE("the streaming path tiles soft-cap, ALiBi and the window as the standard path does",
          "[modern][kernels]") {
    const ScoreMods mods = generated_mods();
    const std::size_t n = GENERATE(7, 130), m = 600, d_k = 8;  // several query and key tiles
    CAPTURE(mods.cap, mods.slope, mods.window, mods.sinks, mods.causal, n);
    const std::vector<float> q = random_values(n * d_k, 2, 2.0f),
                             k = random_values(m * d_k, 3, 2.0f),
                             v = random_values(m * d_k, 4, 1.0f);
    const mha::Masks masks = masks_of(mods);
    const mha::HeadMask mask = head_mask(masks, n, m);
    const float factor = float(1.0 / std::sqrt(double(d_k)));
    std::vector<float> weights(n * m), expected(n * d_k), context(n * d_k);
    mha::matmul({q.data(), n, d_k, d_k, 1}, mha::MatrixView{k.data(), m, d_k, d_k, 1}.transposed(),
                weights.data(), m);
    mha::scale_mask_softmax(weights.data(), factor, mask, false);
    mha::matmul({weights.data(), n, m, m, 1}, {v.data(), m, d_k, d_k, 1}, expected.data(), d_k);
    mha::attend_streaming({q.data(), n, d_k, d_k, 1}, {k.data(), m, d_k, d_k, 1},
                          {v.data(), m, d_k, d_k, 1}, mask, factor, false, context.data(), d_k);
    const test::Difference d = test::max_difference(context, expected);
    INFO("worst difference " << d.worst << " at " << d.index);
    REQUIRE(d.worst <= weights_tolerance);
}

TEST_CASE("the flash row by hand: d_k = 1, four keys in tiles of two", "[modern][flash]") {
    // q = 1, keys 0, 1, 2, 3 (so the scores are 0, 1, 2, 3 with factor 1), values 1, 2, 3, 4.
    // tile 1: m = 1, l = e^-1 + 1 = 1.367879, o = e^-1·1 + 1·2 = 2.367879
    // tile 2: m = 3, c = e^-2 = 0.135335, l = 1.367879·c + e^-1 + 1 = 1.553001,
    //         o = 2.367879·c + e^-1·3 + 4 = 5.424096;  context = o / l = 3.492655,
    // the softmax of (0, 1, 2, 3) against (1, 2, 3, 4): 108.94588 / 31.192875 = 3.492655
    const float q[] = {1.0f}, keys[] = {0.0f, 1.0f, 2.0f, 3.0f},
                values[] = {1.0f, 2.0f, 3.0f, 4.0f};
    const mha::Masks none;
    const mha::HeadMask mask = head_mask(none, 1, 4);
    const mha::FlashRow r = mha::trace_flash_row({q, 1, 1, 1, 1}, {keys, 4, 1, 1, 1},
                                                 {values, 4, 1, 1, 1}, mask, 1.0f, 0, 2);
    REQUIRE(r.tiles.size() == 2);
    CHECK(r.tiles[0].first_key == 0);
    CHECK(r.tiles[0].running_max == 1.0f);
    CHECK(r.tiles[0].shrink == 0.0f);  // m was -inf before the first tile
    CHECK(r.tiles[0].running_sum == Approx(1.367879).epsilon(1e-6));
    CHECK(r.tiles[0].output[0] == Approx(2.367879).epsilon(1e-6));
    CHECK(r.tiles[1].tile_max == 3.0f);
    CHECK(r.tiles[1].shrink == Approx(0.135335).epsilon(1e-5));
    CHECK(r.tiles[1].running_sum == Approx(1.553001).epsilon(1e-6));
    CHECK(r.tiles[1].output[0] == Approx(5.424096).epsilon(1e-6));
    CHECK(r.context[0] == Approx(3.492655).epsilon(1e-6));
}

TEST_CASE("the flash row is the streaming path's row, and the standard path's", "[modern][flash]") {
    const ScoreMods mods = generated_mods();
    const std::size_t n = 130, m = 600, d_k = 8;
    const std::size_t row = GENERATE(0, 2, 64, 129);
    CAPTURE(mods.cap, mods.slope, mods.window, mods.sinks, mods.causal, row);
    const std::vector<float> q = random_values(n * d_k, 5, 2.0f),
                             k = random_values(m * d_k, 6, 2.0f),
                             v = random_values(m * d_k, 7, 1.0f);
    const mha::Masks masks = masks_of(mods);
    const mha::HeadMask mask = head_mask(masks, n, m);
    const float factor = float(1.0 / std::sqrt(double(d_k)));
    std::vector<float> context(n * d_k), weights(n * m), expected(n * d_k);
    mha::attend_streaming({q.data(), n, d_k, d_k, 1}, {k.data(), m, d_k, d_k, 1},
                          {v.data(), m, d_k, d_k, 1}, mask, factor, false, context.data(), d_k);
    const mha::FlashRow r =
        mha::trace_flash_row({q.data(), n, d_k, d_k, 1}, {k.data(), m, d_k, d_k, 1},
                             {v.data(), m, d_k, d_k, 1}, mask, factor, row);
    CHECK(r.tiles.size() == (mask.key_end(row) + mha::stream_key_tile - 1) / mha::stream_key_tile);
    for (std::size_t j = 0; j < d_k; ++j)
        CHECK(r.context[j] == context[row * d_k + j]);  // same bits

    mha::matmul({q.data(), n, d_k, d_k, 1}, mha::MatrixView{k.data(), m, d_k, d_k, 1}.transposed(),
                weights.data(), m);
    mha::scale_mask_tile(weights.data(), m, 0, n, 0, m, factor, mask);
    const float* s = weights.data() + row * m;  // the row's masked scores
    const float max = *std::max_element(s, s + m);
    double sum = 0.0;
    for (std::size_t j = 0; j < m; ++j) sum += std::exp(double(s[j]) - max);
    CHECK(r.tiles.back().running_max == Approx(max).margin(1e-5));
    CHECK(r.tiles.back().running_sum == Approx(sum).epsilon(1e-5));
    mha::softmax_rows(weights.data(), n, m, false);
    mha::matmul({weights.data(), n, m, m, 1}, {v.data(), m, d_k, d_k, 1}, expected.data(), d_k);
    for (std::size_t j = 0; j < d_k; ++j)
        CHECK(r.context[j] == Approx(expected[row * d_k + j]).margin(weights_tolerance));
}

TEST_CASE("quiz: the RoPE and window answers agree with the formulas on the stated sizes",
          "[modern][quiz]") {
    const std::vector<mha::Question> questions =
        mha::make_questions(14, 24, {mha::Topic::Rope, mha::Topic::Window});
    for (const mha::Question& q : questions) {
        CAPTURE(q.text);
        std::smatch m;
        if (q.topic == mha::Topic::Rope) {
            REQUIRE(std::regex_search(
                q.text, m, std::regex(R"(--rope (\w+) \(d_k = (\d+)\), feature (\d+))")));
            const std::size_t d_k = std::stoul(m[2]), f = std::stoul(m[3]);
            // half: f and f ± d_k/2; interleaved: f and f xor 1
            const std::size_t partner =
                m[1] == "half" ? (f < d_k / 2 ? f + d_k / 2 : f - d_k / 2) : (f ^ 1u);
            CHECK(q.answer == std::vector<std::uint64_t>{partner});
        } else {
            REQUIRE(std::regex_search(
                q.text, m, std::regex(R"(--window (\d+), how many keys does query (\d+))")));
            const std::size_t w = std::stoul(m[1]), row = std::stoul(m[2]);
            CHECK(q.answer == std::vector<std::uint64_t>{std::min(row + 1, w)});
        }
    }
}

TEST_CASE("the Llama and Mistral presets turn on RoPE with their base, and Mistral its window",
          "[modern][preset]") {
    const test::RunResult llama = test::run_mha("--preset llama3-8b -n 4 --shapes-only --trace");
    REQUIRE(llama.status == 0);
    CHECK_THAT(llama.output,
               Catch::Contains("RoPE, half layout") && Catch::Contains("500000^(-2i/128)"));
    const test::RunResult mistral = test::run_mha("--preset mistral-7b --shapes-only --trace");
    REQUIRE(mistral.status == 0);
    CHECK_THAT(mistral.output,
               Catch::Contains("10000^(-2i/128)") && Catch::Contains("sliding window W = 4096"));
    const test::RunResult mine =
        test::run_mha("--preset llama2-7b -n 4 --rope interleaved --shapes-only --trace");
    REQUIRE(mine.status == 0);
    CHECK_THAT(mine.output, Catch::Contains("RoPE, interleaved layout"));
    const test::RunResult gpt2 = test::run_mha("--preset gpt2 -n 4 --shapes-only --trace");
    CHECK_THAT(gpt2.output, !Catch::Contains("RoPE"));
}

TEST_CASE("--summary shows how the soft-cap bounds the scores", "[modern][softcap]") {
    const test::RunResult r = test::run_mha("--softcap 2 --summary -n 6 -d 32 -H 2");
    REQUIRE(r.status == 0);
    std::smatch m;
    const std::string text = std::regex_replace(r.output, std::regex("\\s+"), " ");
    REQUIRE(std::regex_search(
        text, m,
        std::regex(R"(largest \|score\| was ([0-9.]+) before C·tanh\(s/C\) and ([0-9.]+) after)")));
    const double before = std::stod(m[1]), after = std::stod(m[2]);
    CHECK(after == Approx(2.0 * std::tanh(before / 2.0)).margin(2e-3));  // printed to 3 decimals
    CHECK(after < 2.0);
}

TEST_CASE("decode's step 9 states the window and sinks each token's query reads, as computed",
          "[modern][window][decode]") {
    // W = 3, S = 1, T = 7: token t (position p = t - 1) sees j <= p with p - 3 < j or j < 1.
    // Token 4 (p = 3): keys 1..3 and sink 0, all 4 cached. Token 6 (p = 5): keys 3..5 and
    // sink 0, 4 of the 6 cached.
    const std::string path = test::temp_path("decode_window.npz");
    const test::RunResult r = test::run_mha(
        "--decode 7 --window 3 --sink-tokens 1 -d 8 -H 2 -b 1 --trace --save " + path);
    REQUIRE(r.status == 0);
    const std::string text = one_line(r.output);
    CHECK_THAT(text, !Catch::Contains("no mask"));
    CHECK_THAT(text, Catch::Contains(
                         "sliding window W = 3 with 1 sinks: all 4 cached positions are visible"));
    CHECK_THAT(text, Catch::Contains(
                         "sliding window W = 3: position 5 reads keys 3..5 and the sinks 0..0, "
                         "4 of the 6 cached"));
    // every token's note names exactly the keys its weights row is non-zero on
    const mha::Tensor weights = mha::npy::to_tensor(mha::npy::read_npz(path).at("attn_weights"));
    const std::regex reads(
        R"(position (\d+) reads keys (\d+)\.\.(\d+)( and the sinks 0\.\.(\d+))?, (\d+) of the (\d+) cached)");
    std::size_t checked = 0;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), reads);
         it != std::sregex_iterator(); ++it, ++checked) {
        const std::smatch& m = *it;
        const std::size_t p = std::stoul(m[1]), first = std::stoul(m[2]), last = std::stoul(m[3]);
        const std::size_t sinks = m[5].matched ? std::stoul(m[5]) + 1 : 0;
        CHECK(std::stoul(m[6]) == (last - first + 1) + sinks);
        CHECK(std::stoul(m[7]) == p + 1);
        for (std::size_t head = 0; head < 2; ++head) {
            for (std::size_t j = 0; j < 7; ++j) {
                const bool read = j < sinks || (first <= j && j <= last);
                CAPTURE(p, head, j);
                CHECK((weights.at({0, head, p, j}) != 0.0f) == read);
            }
        }
    }
    CHECK(checked == 3);  // positions 4, 5 and 6 lose keys to the window
    std::remove(path.c_str());
}

TEST_CASE("decode's step 9 lists ALiBi's slopes and the soft-cap it applies", "[modern][decode]") {
    const test::RunResult r =
        test::run_mha("--decode 3 --alibi --softcap 5 -d 8 -H 2 -b 1 --trace");
    REQUIRE(r.status == 0);
    const std::string text = one_line(r.output);
    std::size_t softmax_steps = 0;
    for (std::size_t at = text.find("softmax(q_t"); at != std::string::npos;
         at = text.find("softmax(q_t", at + 1), ++softmax_steps) {
        const std::string step = text.substr(at, text.find("out_t", at) - at);
        CHECK_THAT(step, Catch::Contains("ALiBi: scores += -m_i·|p - j|") &&
                             Catch::Contains("slopes m_0..m_1 = 0.0625, 0.00390625") &&
                             Catch::Contains("soft-cap: scores = 5·tanh(scores / 5)") &&
                             Catch::Contains("no causal mask needed"));
    }
    CHECK(softmax_steps == 3);
}

TEST_CASE("flash_facts by hand: three tiles of the streaming path's width", "[modern][flash]") {
    // d_k = 1, q = 1, factor 1, 600 keys: key j and value j are both t = j / 256 (the tile),
    // so tile t's scores are all t. Tiles of 256: keys 0..255, 256..511, 512..599.
    // tile 0: m = 0, l = 256, o = 0
    // tile 1: m = 1, rescale e^-1, l = 256/e + 256 = 350.1774, o = 0 + 256·1 = 256
    // tile 2: m = 2, rescale e^-1, l = 350.1774/e + 88 = 216.8224, o = 256/e + 88·2 = 270.1774
    // context = 270.1774 / 216.8224 = 1.246074 = (256e + 2·88e²) / (256 + 256e + 88e²)
    REQUIRE(mha::stream_key_tile == 256);
    const std::size_t m = 600;
    std::vector<float> keys(m), values(m);
    for (std::size_t j = 0; j < m; ++j) keys[j] = values[j] = float(j / 256);
    const float q[] = {1.0f};
    const mha::Masks none;
    const mha::HeadMask mask = head_mask(none, 1, m);
    const mha::FlashFacts f = mha::flash_facts({q, 1, 1, 1, 1}, {keys.data(), m, 1, 1, 1},
                                               {values.data(), m, 1, 1, 1}, mask, 1.0f, 0, 0);
    const double e = std::exp(1.0);
    REQUIRE(f.tiles.size() == 3);
    CHECK(f.tiles[2].first_key == 512);
    CHECK(f.tiles[2].keys == 88);
    CHECK(f.tiles[0].running_sum == Approx(256.0));
    CHECK(f.tiles[0].output[0] == 0.0f);
    CHECK(f.tiles[1].shrink == Approx(1.0 / e).epsilon(1e-6));
    CHECK(f.tiles[1].running_sum == Approx(256.0 / e + 256.0).epsilon(1e-6));
    CHECK(f.tiles[1].output[0] == Approx(256.0).epsilon(1e-6));
    CHECK(f.tiles[2].running_max == 2.0f);
    CHECK(f.tiles[2].running_sum == Approx((256.0 / e + 256.0) / e + 88.0).epsilon(1e-6));
    CHECK(f.tiles[2].output[0] == Approx(256.0 / e + 176.0).epsilon(1e-6));
    const double context = (256.0 * e + 176.0 * e * e) / (256.0 + 256.0 * e + 88.0 * e * e);
    CHECK(f.context[0] == Approx(context).epsilon(1e-6));
    CHECK(f.standard[0] == Approx(context).epsilon(1e-6));
    CHECK(f.max_difference <= 1e-6);
}

TEST_CASE("--flash-row traces one row of the streaming path tile by tile", "[modern][flash]") {
    const std::string run = "-b 1 -n 600 -d 16 -H 2 --causal --attention streaming --flash-row 599";
    const test::RunResult r = test::run_mha(run);
    REQUIRE(r.status == 0);
    const std::string text = one_line(r.output);
    CHECK_THAT(text,
               Catch::Contains("flash row: query 599 of batch 0, head 0, keys in tiles of 256") &&
                   Catch::Contains("tile 0, keys 0..255: tile max") &&
                   Catch::Contains("first visible keys: l and o start here") &&
                   Catch::Contains("tile 2, keys 512..599: tile max"));
    std::smatch m;
    REQUIRE(std::regex_search(text, m, std::regex(R"(max difference ([0-9.e-]+))")));
    CHECK(std::stod(m[1]) <= weights_tolerance);
    // causal: row 3 sees keys 0..3 only, so its first tile is its last
    const test::RunResult early =
        test::run_mha("-b 1 -n 600 -d 16 -H 2 --causal --attention streaming --flash-row 3");
    CHECK_THAT(one_line(early.output),
               Catch::Contains("tile 0, keys 0..255: tile max") && !Catch::Contains("tile 1,"));
    const test::RunResult json = test::run_mha(run + " --format json");
    REQUIRE(json.status == 0);
    CHECK_THAT(json.output, Catch::Contains("\"flash row: query 599 of batch 0, head 0"));
}

TEST_CASE("--form mla computes the fixtures from either state-dict naming", "[modern][mla]") {
    // Hugging Face names (weights.npz) and the paper's separate matrices (weights_scratch.npz)
    // hold the same layer; the output and weights are the naive form's.
    const std::string name = GENERATE("mla_causal", "mla_plain");
    const std::string naming = GENERATE("weights.npz", "weights_scratch.npz");
    CAPTURE(name, naming);
    const std::string folder = "data/modern/" + name + "/";
    const Arrays expected = mha::npy::read_npz(folder + "expected.npz");
    const std::vector<float> sizes =
        tensor(expected, "sizes").to_vector();  // E, h, d_h, d_R, d_c, d_v
    const std::string path = test::temp_path("mla_" + name + ".npz");
    const test::RunResult r =
        test::run_mha("--form mla --weights " + folder + naming + " --input " + folder +
                      "query.npy -H " + std::to_string(int(sizes[1])) +
                      (name == "mla_causal" ? " --causal" : "") + " --save " + path);
    REQUIRE(r.status == 0);
    const Arrays saved = mha::npy::read_npz(path);
    test::require_close(tensor(saved, "attn_weights"), tensor(expected, "attn_weights"),
                        weights_tolerance);
    test::require_close(tensor(saved, "output"), tensor(expected, "output"), output_tolerance);
    std::remove(path.c_str());
}

TEST_CASE("--form mla traces both forms, their difference and the cache ledger", "[modern][mla]") {
    // seeded: d_model 64, h 4, so d_h = d_v = 16, d_c = 4·16 = 64, d_R = 16/2 = 8;
    // cache numbers per token: MHA 2·4·16 = 128, GQA G=2 2·2·16 = 64, MQA 2·16 = 32, MLA 64 + 8 =
    // 72
    const test::RunResult r = test::run_mha("--form mla -d 64 -H 4 -n 6 -b 1 --causal --trace");
    REQUIRE(r.status == 0);
    const std::string text = one_line(r.output);
    CHECK_THAT(
        text,
        Catch::Contains("multi-head latent attention (DeepSeek-V2), d_c=64 d_R=8 d_h=16 d_v=16") &&
            Catch::Contains("MHA 2·h·d_h = 128 numbers, 512 B/token") &&
            Catch::Contains("GQA G=2 2·G·d_h = 64 numbers") &&
            Catch::Contains("MQA 2·d_h = 32 numbers") &&
            Catch::Contains("MLA (this run) d_c + d_R = 72 numbers, 288 B/token") &&
            Catch::Contains("kv_a_layernorm(c_kv)") && Catch::Contains("(q_nope @ W_UK)"));
    const std::regex difference(R"(largest difference from the naive form: ([0-9.e-]+))");
    std::size_t found = 0;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), difference);
         it != std::sregex_iterator(); ++it, ++found) {
        CHECK(std::stod((*it)[1]) <= 1e-5);
    }
    CHECK(found == 2);  // the weights and the output
    const test::RunResult shapes =
        test::run_mha("--form mla -d 64 -H 4 -n 6 --shapes-only --format markdown");
    REQUIRE(shapes.status == 0);
    CHECK_THAT(one_line(shapes.output), Catch::Contains("MLA (this run) d_c + d_R = 72 numbers") &&
                                            !Catch::Contains("largest difference"));
    const test::RunResult heatmap =
        test::run_mha("--form mla -d 32 -H 2 -n 4 --causal --heatmap --color never");
    REQUIRE(heatmap.status == 0);
    CHECK_THAT(heatmap.output, Catch::Contains("head 1"));
    const test::RunResult json =
        test::run_mha("--form mla -d 32 -H 2 -n 4 --latent-dim 8 --rope-dim 4 --format json");
    REQUIRE(json.status == 0);
    CHECK_THAT(json.output, Catch::Contains("d_c=8 d_R=4") &&
                                Catch::Contains("largest difference from the naive form"));
}

TEST_CASE("the MLA header gives its heads' true width and its own matrices", "[modern][mla]") {
    // d_model 64, h 4: d_h = d_v = 16, d_R = 8, d_c = 64. Each head's q and k are
    // [nope (16), RoPE (8)]: d_k = 24, what the scores are divided by the square root of.
    // q_proj (4·24, 64) = 6,144, kv_a_proj_with_mqa (64 + 8, 64) = 4,608, kv_a_layernorm 64,
    // kv_b_proj (4·(16 + 16), 64) = 8,192, o_proj (64, 4·16) = 4,096: 23,104 in all
    const test::RunResult r = test::run_mha("--form mla -d 64 -H 4 -n 3 -b 1");
    REQUIRE(r.status == 0);
    const std::string text = one_line(r.output);
    CHECK_THAT(text,
               Catch::Contains("d_model=64 h=4 d_k=24") &&
                   Catch::Contains("(q and k: d_k = d_h + d_R)") &&
                   Catch::Contains("parameters: 23,104") &&
                   Catch::Contains("per projection: q_proj (96, 64) = 6,144, "
                                   "kv_a_proj_with_mqa (72, 64) = 4,608, kv_a_layernorm "
                                   "(64), kv_b_proj (128, 64) = 8,192, o_proj (64, 64) = 4,096") &&
                   Catch::Contains("per head: d_h + d_R = 24 rows of q_proj") &&
                   !Catch::Contains("W_q, W_k, W_v, W_o"));
    const test::RunResult json = test::run_mha("--form mla -d 64 -H 4 -n 3 --format json");
    REQUIRE(json.status == 0);
    CHECK_THAT(json.output, Catch::Contains("\"d_k\":24"));
    const test::RunResult shapes = test::run_mha("--form mla -d 64 -H 4 -n 3 --shapes-only");
    REQUIRE(shapes.status == 0);
    CHECK_THAT(one_line(shapes.output), Catch::Contains("h=4 d_k=24"));
}

TEST_CASE("the DeepSeek-V2-Lite preset computes MLA with the model's sizes",
          "[modern][preset][mla][big]") {
    // config.json: hidden 2048, 16 heads, kv_lora_rank 512, qk_rope 64, qk_nope 128, v 128:
    // cache per token MHA 2·16·128 = 4096 numbers, GQA G=8 2048, MQA 256, MLA 512 + 64 = 576
    const test::RunResult shapes = test::run_mha("--preset deepseek-v2-lite --shapes-only");
    REQUIRE(shapes.status == 0);
    CHECK_THAT(one_line(shapes.output),
               Catch::Contains("d_c=512 d_R=64 d_h=128 d_v=128") &&
                   Catch::Contains("MHA 2·h·d_h = 4096 numbers, 16 KiB/token") &&
                   Catch::Contains("GQA G=8 2·G·d_h = 2048 numbers") &&
                   Catch::Contains("MLA (this run) d_c + d_R = 576 numbers, 2.3 KiB/token") &&
                   Catch::Contains("N = 4096 tokens"));
    const test::RunResult computed = test::run_mha("--preset deepseek-v2-lite -n 3 --trace");
    REQUIRE(computed.status == 0);
    std::smatch m;
    const std::string text = one_line(computed.output);
    REQUIRE(std::regex_search(
        text, m, std::regex(R"(largest difference from the naive form: ([0-9.e-]+))")));
    CHECK(std::stod(m[1]) <= 1e-5);
    const test::RunResult packed =
        test::run_mha("--preset deepseek-v2-lite --form packed -n 4 --shapes-only");
    REQUIRE(packed.status == 0);
    CHECK_THAT(packed.output, !Catch::Contains("latent"));
    // a form MLA has no version of is refused, not computed as plain MHA (--decode decodes
    // MLA with its latent cache: tests/test_mla_decode.cpp)
    for (const char* form : {" --per-head", " --fused-qkv", " --block pre"}) {
        test::check_rejected(std::string("--preset deepseek-v2-lite --shapes-only") + form,
                             "--preset deepseek-v2-lite attends with MLA (--form mla), which "
                             "--fused-qkv, --per-head and --block do not compute; "
                             "--form packed runs its sizes as plain multi-head attention");
    }
}

TEST_CASE("an MLA state dict names what it lacks or holds too much of, in either naming",
          "[modern][mla]") {
    Arrays scratch = mha::npy::read_npz("data/modern/mla_causal/weights_scratch.npz");
    REQUIRE_THROWS_WITH(
        mha::mla_weights_from_state_dict(scratch, "s.npz", 3),
        "s.npz: array 'W_uk.weight' has 8 rows, not a whole number per head for h = 3");
    scratch.erase("W_uv.weight");
    REQUIRE_THROWS_WITH(
        mha::mla_weights_from_state_dict(scratch, "s.npz", 2),
        Catch::StartsWith("s.npz: missing array 'W_uv.weight' (from-scratch MLA: W_q.weight"));
    Arrays hf = mha::npy::read_npz("data/modern/mla_causal/weights.npz");
    hf.emplace("o_proj.bias", hf.at("kv_a_layernorm.weight"));
    REQUIRE_THROWS_WITH(mha::mla_weights_from_state_dict(hf, "h.npz", 2),
                        Catch::StartsWith("h.npz: unexpected array 'o_proj.bias' of shape (6,)"));
    hf.erase("kv_b_proj.weight");
    REQUIRE_THROWS_WITH(
        mha::mla_weights_from_state_dict(hf, "h.npz", 2),
        Catch::StartsWith("h.npz: missing array 'kv_b_proj.weight' (DeepSeek-V2 MLA:"));
}

}  // namespace test_modern
