// The quantised KV cache (--decode T --kv-quant int8|int4): the quantiser against a reference
// written in numpy (tests/data/make_kv_quant_fixtures.py), bit for bit; its rules by hand; the
// trace, the dry run, the bytes; and the refusals.

#include <catch2/catch.hpp>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "core/forms/decode.h"
#include "core/forms/kv_quant.h"
#include "core/tensor/storage.h"
#include "core/tensor/workspace.h"
#include "helpers.h"
#include "io/dry.h"
#include "io/init.h"
#include "io/npy.h"
#include "recorder.h"
#include "show/notes.h"

namespace test_kv_quant {

namespace {

using Arrays = std::map<std::string, mha::npy::Array>;

// mha's output against the reference's float64 decode over the same dequantised cache: the
// float32 projections and softmax round differently.
constexpr double output_tolerance = 1e-5;

mha::Tensor tensor_of(const Arrays& arrays, const std::string& name) {
    INFO("array " << name);
    REQUIRE(arrays.count(name) == 1);
    return mha::npy::to_tensor(arrays.at(name));
}

}  // namespace

TEST_CASE("--kv-quant's dequantised K and V, scales and zero points equal numpy's bit for bit",
          "[kvquant]") {
    for (const test::FixtureCase& c : test::read_cases("data/kv_quant_cases.txt")) {
        const std::string dir = "data/kv_quant/" + c.name + "/";
        for (const char* view : {"", " --trace --values"}) {
            CAPTURE(c.name, view);
            const std::string saved = test::temp_path("kv_quant.npz");
            const test::RunResult run = test::run_mha(
                "--decode 7 --heads 2 --weights " + dir + "weights.npz --input " + dir +
                    "query.npy --save " + saved + " " + c.options + view + " > /dev/null",
                true);
            REQUIRE(run.status == 0);
            const Arrays actual = mha::npy::read_npz(saved);
            const Arrays expected = mha::npy::read_npz(dir + "expected.npz");
            std::remove(saved.c_str());
            for (const char* name :
                 {"k_cache.dequantised", "v_cache.dequantised", "k_cache.scale", "k_cache.zero",
                  "v_cache.scale", "v_cache.zero"}) {
                CAPTURE(name);
                const mha::Tensor a = tensor_of(actual, name), e = tensor_of(expected, name);
                REQUIRE(a.shape() == e.shape());
                CHECK(test::same_bits(a.to_vector(), e.to_vector()));
            }
            test::require_close(tensor_of(actual, "output"), tensor_of(expected, "output"),
                                output_tolerance);
        }
    }
}

TEST_CASE("the quantiser by hand: min-max, ties to even, a flat group keeps its value",
          "[kvquant]") {
    // int4: m = 0, s = (0.9375 - 0) / 15 = 0.0625; (x - m) / s = 0, 15, 2.5, 3.5
    // -> q = 0, 15, 2 (ties to even), 4 (ties to even) -> x̂ = 0, 0.9375, 0.125, 0.25
    const std::vector<float> x = {0.0f, 0.9375f, 0.15625f, 0.21875f};
    std::vector<float> x_hat(4);
    const mha::GroupCode code = mha::quantise_group(x.data(), 4, 1, 4, x_hat.data());
    CHECK(code.scale == 0.0625f);
    CHECK(code.zero == 0.0f);
    CHECK(x_hat == std::vector<float>{0.0f, 0.9375f, 0.125f, 0.25f});
    // a strided group (a channel along the tokens) whose values are all equal: s = 0, x̂ = m
    const std::vector<float> flat = {0.5f, 9.0f, 0.5f, 9.0f, 0.5f, 9.0f};
    std::vector<float> out(6, -1.0f);
    const mha::GroupCode flat_code = mha::quantise_group(flat.data(), 3, 2, 8, out.data());
    CHECK(flat_code.scale == 0.0f);
    CHECK(flat_code.zero == 0.5f);
    CHECK(out == std::vector<float>{0.5f, -1.0f, 0.5f, -1.0f, 0.5f, -1.0f});
}

TEST_CASE("groups, the positions quantised and the cache's bytes by hand", "[kvquant]") {
    mha::KvQuant q;  // kivi, int4, default group
    q.bits = 4;
    // d_k = 128, T = 8192: 32 both ways; d_k = 8, T = 6: 8 along d_k, 6 along the tokens
    CHECK(mha::quant_group(q, mha::QuantAxis::Token, 8192, 128) == 32);
    CHECK(mha::quant_group(q, mha::QuantAxis::Channel, 8192, 128) == 32);
    CHECK(mha::quant_group(q, mha::QuantAxis::Token, 6, 8) == 8);
    CHECK(mha::quant_group(q, mha::QuantAxis::Channel, 6, 8) == 6);
    q.residual = 2;
    // 9 cached, the last 2 float: 7 old; along the tokens in whole groups of 3: 6
    CHECK(mha::quantised_positions(q, mha::QuantAxis::Token, 4, 9) == 7);
    CHECK(mha::quantised_positions(q, mha::QuantAxis::Channel, 3, 9) == 6);
    CHECK(mha::quantised_positions(q, mha::QuantAxis::Channel, 3, 1) == 0);

    // B = 1, G = 2, d_k = 4, T = 6, int4, group 2 both ways, no residual, 5 cached:
    // K per channel: 4 positions quantised (2 groups), 1 float; V per token: 5 quantised.
    //   codes: (4 + 5) positions · 2 heads · 4 channels · 4 bits = 72 · 0.5 = 36 bytes
    //   scales and zeros: K 2·2·4 = 16 groups, V 5·2·2 = 20 groups: 36 · 2 · 4 = 288 bytes
    //   float: K's last position, 2 · 4 · 4 = 32 bytes; all float: 2 · 5 · 2 · 4 · 4 = 320
    q.group = 2;
    q.residual = 0;
    const mha::Sizes s{1, 6, 6, 8, 8, 8, 2, 2, 4};
    const mha::KvQuantBytes bytes = mha::kv_quant_bytes(q, s, 5);
    CHECK(bytes.codes == 36);
    CHECK(bytes.scales == 288);
    CHECK(bytes.floats == 32);
    CHECK(bytes.plain == 320);
}

TEST_CASE("the trace shows scales, zero points, the dequantised cache and the error",
          "[kvquant]") {
    const test::RunResult run = test::run_mha(
        "-b 1 -d 16 -H 2 --decode 6 --kv-quant int4 --kv-quant-group 4 --trace");
    REQUIRE(run.status == 0);
    const std::string out = test::flat(run.output);
    CHECK_THAT(out, Catch::Contains("decoding with an int4 KV cache") &&
                        Catch::Contains("K_zero = K_cache[:, :, :4].unflatten(2, (-1, 4))"
                                        ".amin(dim=3)") &&
                        Catch::Contains("V_scale = (V_cache[:, :, :1].unflatten(3, (-1, 4))") &&
                        Catch::Contains("V_hat = V_scale * ((V_cache - V_zero) / V_scale)") &&
                        Catch::Contains("scores_error") && Catch::Contains("weights_error") &&
                        Catch::Contains("out_error") &&
                        Catch::Contains("the weights minus the same step over the float cache: "
                                        "moved by at most") &&
                        Catch::Contains("the weight that moved most: batch 0, head") &&
                        Catch::Contains("K in groups of 4 positions along the tokens"));
    // after token 6 (B = 1, G = 2, d_k = 8): K per channel, one group of 4 positions
    // quantised, 2 float; V per token, 6 positions in 2 groups of 4 values each.
    //   codes (4 + 6)·2·8 values · 4 bits = 80 bytes; scales and zeros (K 1·2·8 + V 6·2·2
    //   = 40 groups) · 8 = 320 bytes; K's 2 float positions 2·2·8·4 = 128 bytes;
    //   528 in all, against 2·6·2·8·4 = 768 bytes all float
    CHECK_THAT(out, Catch::Contains("the cache holds 528 bytes for its 6 positions: 80 of int4 "
                                    "codes, 320 of scales and zero points, 128 in float; all "
                                    "float: 768 bytes"));
}

TEST_CASE("a dry run of the quantised decode describes the computed steps, on no storage",
          "[kvquant][dry]") {
    const mha::Sizes s{2, 5, 5, 16, 16, 16, 4, 2, 4};
    mha::KvQuant quant;
    quant.bits = GENERATE(4u, 8u);
    quant.group = 2;
    quant.residual = 1;
    mha::ForwardOptions options;
    options.heads = s.heads;
    options.path = GENERATE(mha::AttentionPath::Standard, mha::AttentionPath::Streaming);
    mha::Masks masks;
    masks.causal = true;
    test::Recorder computed, dry;
    mha::decode(mha::seeded_weights(s.d_model, s.inner(), s.kv_heads * s.d_k(), true, true, 1),
                mha::seeded_inputs(s, true, 1), masks, options, computed, nullptr, quant);
    for (mha::Step& step : computed.steps) {  // measured errors: none in a dry run
        if (!step.facts.quant_error) continue;
        CHECK(step.facts.quant_error->max_abs.has_value());
        step.facts.quant_error->max_abs.reset();
        step.facts.quant_error->relative.reset();
        step.facts.quant_error->moved.reset();
    }
    for (mha::Step& step : computed.steps) {
        if (step.facts.kv_quant) step.facts.kv_quant->example.reset();
    }
    mha::Workspace workspace = mha::Workspace::dry();
    options.workspace = &workspace;
    const std::uint64_t before = mha::tensor_bytes_handed_out();
    mha::decode(mha::dry_weights(s, true, false), mha::dry_inputs(s, true), masks, options, dry,
                nullptr, quant);
    CHECK(mha::tensor_bytes_handed_out() == before);
    REQUIRE(dry.steps.size() == computed.steps.size());
    for (std::size_t i = 0; i < dry.steps.size(); ++i) {
        const mha::Step& a = dry.steps[i];
        const mha::Step& b = computed.steps[i];
        CAPTURE(i, b.number, b.tensor);
        CHECK(a.kind == b.kind);
        CHECK(a.tensor == b.tensor);
        CHECK(a.expression == b.expression);
        CHECK(a.shape == b.shape);
        CHECK(a.strides == b.strides);
        CHECK(a.macs == b.macs);
        CHECK(mha::step_notes(a) == mha::step_notes(b));
    }
}

TEST_CASE("--shapes-only --kv-quant traces the quantised decode", "[kvquant]") {
    const test::RunResult run =
        test::run_mha("--preset llama3-8b --shapes-only --decode 40 --kv-quant int4");
    REQUIRE(run.status == 0);
    // after token 40: K per channel in groups of 32 along the tokens: 32 positions codes,
    // 8 float; V per token: 40 codes. Per layer, 8 K/V heads of d_k = 128.
    //   codes (32 + 40)·8·128·4 bits = 36,864 bytes; scales and zeros: K 1·8·128 + V
    //   40·8·4 = 2,304 groups · 8 = 18,432 bytes; float K 8·8·128·4 = 32,768; all float
    //   2·40·8·128·4 = 327,680 bytes
    CHECK_THAT(test::flat(run.output),
               Catch::Contains("the cache holds 88,064 bytes for its 40 positions: 36,864 of "
                               "int4 codes, 18,432 of scales and zero points, 32,768 in float; "
                               "all float: 327,680 bytes (26.9% of it)"));
}

TEST_CASE("--kv-quant refusals", "[kvquant][errors]") {
    const std::string decode = "-b 1 -d 16 -H 2 --decode 6 ";  // d_k = 8, T = 6
    test::check_rejected(decode + "--kv-quant int4 --kv-quant-axis token --kv-quant-group 3",
                         "--kv-quant-group 3 does not divide d_k = 8: K and V are grouped along "
                         "d_k, within each token's vector");
    test::check_rejected(decode + "--kv-quant int4 --kv-quant-group 3",
                         "--kv-quant-group 3 does not divide d_k = 8: V is grouped along d_k");
    test::check_rejected("-b 1 -d 96 -H 2 --decode 40 --kv-quant int8",
                         "the default group 32 does not divide d_k = 48");
    test::check_rejected(decode + "--kv-quant int4 --kv-quant-axis channel --kv-quant-group 8",
                         "--kv-quant-group 8 is longer than the cache of 6 positions: K and V "
                         "are grouped along the tokens, and no group would fill");
    test::check_rejected(decode + "--kv-quant int8 --kv-residual 7",
                         "--kv-residual 7 is larger than the cache: --decode 6 caches 6 positions");
    test::check_rejected(decode + "--kv-quant-group 4",
                         "--kv-quant-group, --kv-quant-axis and --kv-residual shape the quantised "
                         "cache of --kv-quant; give --kv-quant int8 or int4 too");
    test::check_rejected(decode + "--kv-residual 2", "give --kv-quant int8 or int4 too");
    test::check_rejected("-b 1 -d 16 -H 2 --kv-quant int8",
                         "--kv-quant quantises the KV cache of --decode T (token by token); give "
                         "--decode");
    test::check_rejected("-b 1 -d 16 -H 2 --prefill-chunks 2,2 --kv-quant int8",
                         "(--prefill-chunks does not take it)");
    test::check_rejected(decode + "--kv-quant int8 --kv-block-size 4",
                         "--kv-quant and --kv-block-size do not go together yet");
    test::check_rejected(decode + "--kv-quant int8 --kv-quant-group 0",
                         "--kv-quant-group must be at least 1, got 0");
    test::check_rejected(decode + "--kv-quant int3",
                         "--kv-quant expects one of int4, int8, got 'int3'; did you mean");
    test::check_rejected(decode + "--kv-quant int8 --kv-quant-axis chanel",
                         "--kv-quant-axis expects one of channel, kivi, token, got 'chanel'; did "
                         "you mean 'channel'?");
}

}  // namespace test_kv_quant
