// The variants of the forward pass equal the packed pass: fused QKV, per-head,
// and KV-cache decoding (against the full causal pass); their options and errors.

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

#include "app/run/budget.h"
#include "app/run/problem.h"
#include "core/forms/decode.h"
#include "core/forms/fused_qkv.h"
#include "core/forms/per_head.h"
#include "core/forms/prefill.h"
#include "core/pass/attention.h"
#include "helpers.h"
#include "io/init.h"
#include "io/npy.h"

namespace test_variants {

using mha::Shape;
using mha::Strides;
using mha::Tensor;

namespace {

constexpr double same_tolerance = 1e-6;  // the same sums in the same order, up to float rounding

mha::ForwardOptions options_for(std::size_t heads) {
    mha::ForwardOptions options;
    options.heads = heads;
    options.threads = 2;
    return options;
}

// Rows [first, first + count) of dimension 1 of a (B, L, E) tensor.
Tensor rows_of(const Tensor& x, std::size_t first, std::size_t count) {
    const std::size_t B = x.size(0), L = x.size(1), E = x.size(2);
    std::vector<float> values;
    const std::vector<float> all = x.to_vector();
    for (std::size_t b = 0; b < B; ++b) {
        values.insert(values.end(), all.begin() + (b * L + first) * E,
                      all.begin() + (b * L + first + count) * E);
    }
    return Tensor({B, count, E}, values);
}

// The lines of a run's output that state results: the output's statistics, the softmax
// summary, each head's pattern and the ablation (not the header, which names the form).
std::string results_of(const std::string& output, bool without_scores) {
    std::istringstream lines(output);
    std::string kept;
    for (std::string line; std::getline(lines, line);) {
        for (const char* start :
             {"output (", "softmax:", "  head ", "ablating head", "scores, all"}) {
            if (line.rfind(start, 0) == 0 && !(without_scores && line.rfind("scores", 0) == 0))
                kept += line + "\n";
        }
    }
    return kept;
}

}  // namespace

TEST_CASE("permute and select share storage and move the strides") {
    const Tensor t({2, 3, 4});
    const Tensor p = t.permute({2, 0, 1});
    CHECK(p.shape() == Shape{4, 2, 3});
    CHECK(p.strides() == Strides{1, 12, 4});
    CHECK(p.shares_storage_with(t));
    const Tensor values({2, 3}, {0, 1, 2, 3, 4, 5});
    CHECK(values.select(0, 1).to_vector() == std::vector<float>{3, 4, 5});
    CHECK(values.select(1, 2).to_vector() == std::vector<float>{2, 5});
    REQUIRE_THROWS_WITH(t.permute({0, 0, 1}), Catch::Contains("is not an order of the 3"));
    REQUIRE_THROWS_WITH(t.select(1, 3), Catch::Contains("index 3 of dimension 1 is out of range"));
}

TEST_CASE("the fused QKV projection equals the three separate ones") {
    const auto [E, h, bias, causal] = GENERATE(table<std::size_t, std::size_t, bool, bool>(
        {{16, 4, true, false}, {12, 3, false, true}, {8, 1, true, true}}));
    CAPTURE(E, h, bias, causal);
    const mha::Weights w = mha::seeded_weights(E, bias, true, 5);
    const mha::Inputs in = mha::seeded_inputs({2, 5, 5, E, E, E, h, h, E / h}, true, 5);
    mha::Masks masks;
    masks.causal = causal;
    mha::NullTracer none;
    const mha::ForwardResult packed = mha::forward(w, in, masks, options_for(h), none);
    const mha::ForwardResult fused = mha::forward_fused_qkv(w, in, masks, options_for(h), none);
    test::require_close(fused.weights, packed.weights, same_tolerance);
    test::require_close(fused.output, packed.output, same_tolerance);
    CHECK(mha::stacked_qkv_weight(w, nullptr).shape() == Shape{3 * E, E});
    CHECK(mha::stacked_qkv_bias(w, nullptr).empty() == !bias);
}

TEST_CASE("attention head by head equals the packed form") {
    const auto [N, M, h, G, causal] =
        GENERATE(table<std::size_t, std::size_t, std::size_t, std::size_t, bool>(
            {{5, 5, 4, 4, false}, {3, 6, 4, 2, true}, {4, 4, 6, 1, true}, {1, 1, 1, 1, false}}));
    CAPTURE(N, M, h, G, causal);
    const std::size_t E = 24;
    const mha::Weights w = mha::seeded_weights(E, G * (E / h), true, true, 7);
    const mha::Inputs in = mha::seeded_inputs({2, N, M, E, E, E, h, G, E / h}, N == M, 7);
    mha::Masks masks;
    masks.causal = causal;
    masks.key_padding = Tensor({2, M});
    masks.key_padding.data()[M - 1] =
        -std::numeric_limits<float>::infinity();  // batch 0's last key
    mha::NullTracer none;
    const mha::ForwardResult packed = mha::forward(w, in, masks, options_for(h), none);
    const mha::ForwardResult heads = mha::forward_per_head(w, in, masks, options_for(h), none);
    test::require_close(heads.weights, packed.weights, same_tolerance);
    test::require_close(heads.output, packed.output, same_tolerance);
    CHECK(heads.fully_masked_rows == packed.fully_masked_rows);
}

TEST_CASE("decoding with a KV cache equals the causal pass, row by row") {
    const auto [T, h, G] = GENERATE(
        table<std::size_t, std::size_t, std::size_t>({{6, 4, 4}, {5, 4, 2}, {1, 2, 1}, {7, 6, 3}}));
    CAPTURE(T, h, G);
    const std::size_t B = 2, E = 24;
    const mha::Weights w = mha::seeded_weights(E, G * (E / h), true, true, 3);
    const mha::Inputs in = mha::seeded_inputs({B, T, T, E, E, E, h, G, E / h}, true, 3);
    mha::Masks causal;
    causal.causal = true;
    mha::NullTracer none;
    const mha::ForwardResult full = mha::forward(w, in, causal, options_for(h), none);
    const mha::ForwardResult decoded = mha::decode(w, in, {}, options_for(h), none);
    test::require_close(decoded.output, full.output, same_tolerance);
    test::require_close(decoded.weights, full.weights, same_tolerance);

    // The last token alone as a query (N = 1) against all T keys: a causal mask aligned to
    // the bottom right lets it see every key, and it gives the decoder's last row.
    const Tensor last = rows_of(in.x_q, T - 1, 1);
    const mha::ForwardResult one =
        mha::forward(w, {last, in.x_q, in.x_q}, causal, options_for(h), none);
    test::require_close(rows_of(decoded.output, T - 1, 1), one.output, same_tolerance);
    // its memory, as a dry decode counts it: at least the cache and the output, on the
    // standard path the (B, h, T, T) weights too, and W_q, W_k, W_v, W_o packed once outside
    // the tensors (each has at most 24 outputs, rounded up to the widest tile's 64, by 24 inputs)
    const mha::Sizes s{B, T, T, E, E, E, h, G, E / h};
    mha::Config c;
    c.form = mha::Form::Decode;
    mha::PassProblem dry = mha::dry_problem(c, s, mha::AttentionPath::Standard, 0);
    const std::uint64_t standard = mha::dry_peak_bytes(c, dry);
    dry.options.path = mha::AttentionPath::Streaming;
    const std::uint64_t streamed = mha::dry_peak_bytes(c, dry);
    CHECK(streamed >= 4 * (2 * B * G * T * (E / h) + B * T * E));
    CHECK(standard - streamed >= 4 * B * h * T * T);
    CHECK(mha::pass_bytes(c, s, dry, mha::AttentionPath::Streaming, 1) - streamed >=
          4 * 4 * 64 * 24);
}

TEST_CASE("chunked prefill gives the one-shot causal pass's bits, row for row", "[prefill]") {
    // chunk ends that fall inside and at the edge of the softmax's 8 lanes, a single-token
    // chunk, GQA, RoPE, a window with a sink, ALiBi and the soft-cap; both paths, 1 and 2 threads
    const auto [N, chunks, G] = GENERATE(table<std::size_t, std::vector<std::size_t>, std::size_t>(
        {{12, {5, 4, 3}, 4}, {40, {37, 3}, 2}, {100, {37, 1, 62}, 4}, {9, {1, 1, 7}, 1}}));
    const auto [variant, threads] = GENERATE(table<int, std::size_t>(
        {{0, 1}, {0, 2}, {1, 2}, {2, 1}, {3, 2}}));
    CAPTURE(N, G, variant, threads);
    const std::size_t B = 2, E = 32, h = 4;
    const mha::Weights w = mha::seeded_weights(E, G * (E / h), true, true, 5);
    const mha::Inputs in = mha::seeded_inputs({B, N, N, E, E, E, h, G, E / h}, true, 5);
    mha::Masks masks;
    masks.causal = true;
    mha::ForwardOptions options = options_for(h);
    options.threads = threads;
    if (variant == 1) options.rope = mha::Rope{};
    if (variant == 2) {
        masks.window = 5;
        masks.sinks = 1;
        masks.alibi = true;
    }
    if (variant == 3) {
        masks.softcap = 4.0;
        options.path = mha::AttentionPath::Streaming;
    }
    mha::NullTracer none;
    const mha::ForwardResult full = mha::forward(w, in, masks, options, none);
    const mha::ForwardResult chunked = mha::prefill(w, in, masks, options, chunks, none);
    CHECK(chunked.output.to_vector() == full.output.to_vector());
    CHECK(chunked.weights.to_vector() == full.weights.to_vector());

    REQUIRE_THROWS_WITH(mha::prefill(w, in, masks, options, {N - 1}, none),
                        "--prefill-chunks add up to " + std::to_string(N - 1) +
                            " tokens, not N = " + std::to_string(N) +
                            "; the chunks split the sequence");
}

TEST_CASE("the variants on the command line") {
    SECTION("each traces and saves what the packed pass saves") {
        const std::string saved = test::temp_path("packed.npz");
        REQUIRE(test::run_mha("-b 1 -n 4 -d 16 -H 4 -G 2 --causal --save " + saved).status == 0);
        const Tensor packed = mha::npy::to_tensor(mha::npy::read_npz(saved).at("output"));
        for (const char* variant : {"--decode 4", "--per-head --causal"}) {
            CAPTURE(variant);
            const test::RunResult r = test::run_mha(
                std::string("-b 1 -d 16 -H 4 -G 2 -n 4 --trace --save ") + saved + " " + variant);
            REQUIRE(r.status == 0);
            test::require_close(mha::npy::to_tensor(mha::npy::read_npz(saved).at("output")), packed,
                                same_tolerance);
        }
        const test::RunResult fused = test::run_mha("-b 1 -n 4 -d 16 -H 4 --fused-qkv --trace");
        REQUIRE(fused.status == 0);
        CHECK_THAT(fused.output, Catch::Contains("qkv.permute(2, 0, 3, 1, 4)") &&
                                     Catch::Contains("(qkv=3, B=1, h=4, N=4, d_k=4)"));
        std::remove(saved.c_str());
    }
    SECTION("per-head and decoding take the packed pass's options") {
        const std::string mask = test::temp_path("variants-mask.npy");
        Tensor m({4, 4});
        for (std::size_t i = 0; i < 16; ++i)
            m.data()[i] = i % 5 == 1 ? -1.5f : 0.25f * float(i % 3);
        std::ofstream(mask, std::ios::binary) << mha::npy::to_npy_bytes(m);
        const std::string sizes = "-b 2 -n 4 -d 16 -H 4 ";
        const auto [form, options, packed_options] =
            GENERATE_COPY(table<std::string, std::string, std::string>({
                {"--per-head", "-G 2 --mask " + mask, "-G 2 --mask " + mask},
                {"--per-head", "--no-scale", "--no-scale"},
                {"--per-head", "-G 2 --causal --ablate-head 2 --summary",
                 "-G 2 --causal --ablate-head 2 --summary"},
                {"--per-head", "--attention streaming --threads 3", "--attention streaming"},
                {"--decode 4", "--no-scale --ablate-head 1", "--causal --no-scale --ablate-head 1"},
                {"--decode 4", "-G 1 --attention streaming", "-G 1 --causal"},
            }));
        CAPTURE(form, options);
        const test::RunResult variant = test::run_mha(sizes + form + " " + options);
        const test::RunResult packed = test::run_mha(sizes + packed_options);
        REQUIRE(variant.status == 0);
        REQUIRE(packed.status == 0);
        // decoding stores no (B, h, N, M) scores, so its summary has no scores line
        const bool decoding = form != "--per-head";
        CHECK(results_of(variant.output, decoding) == results_of(packed.output, decoding));
        CHECK_THAT(results_of(variant.output, false),
                   Catch::Contains("output (B=2, N=4, d_model=16)"));
        std::remove(mask.c_str());
    }
    SECTION("the decode trace shows the cache growing") {
        const test::RunResult r = test::run_mha("-b 1 -d 8 -H 2 --decode 3 --trace");
        REQUIRE(r.status == 0);
        CHECK_THAT(r.output, Catch::Contains("(B=1, h=2, t=3, d_k=4)") &&
                                 Catch::Contains("(B=1, h=2, N=1, t=2)") &&
                                 Catch::Contains("the cache holds 192 bytes of K and V"));
    }
    SECTION("streamed decoding's budget has no (B, h, T, T) weights") {
        // 1000 tokens, 4 heads: the weights would be 15.3 MiB (4·1000²·4 B) of the standard
        // path's 17.4 MiB; streamed, the run needs 2.2 MiB
        const std::string args = "-b 1 -d 64 -H 4 --decode 1000 --max-memory 8M --attention ";
        CHECK(test::run_mha(args + "streaming --format json > /dev/null").status == 0);
        test::check_rejected(args + "standard", "needs 17.4 MiB on the standard path");
    }
    SECTION("combinations that make no sense are one-line errors") {
        const auto [args, message] = GENERATE(table<std::string, std::string>({
            {"--decode 4 --per-head", "choose one"},
            {"--decode 4 -n 5", "--decode 4 and --seq-len 5 disagree"},
            {"--decode 4 -m 6", "decoding is causal self-attention"},
            {"--decode 0", "--decode must be at least 1"},
            {"--fused-qkv -G 2", "the fused QKV projection needs self-attention"},
            {"--decode 20000 -d 1024 -H 16", "more than --max-memory"},
        }));
        test::check_rejected(args, message);
    }
}

}  // namespace test_variants
