// The forward pass: a hand-computed case, every step's shape over a sweep,
// copies and costs, masks, and bit-identical results for every thread count.

#include <catch2/catch.hpp>
#include <cmath>

#include "core/error.h"
#include "core/pass/attention.h"
#include "core/pass/shape_checks.h"
#include "core/threads/parallel.h"
#include "helpers.h"
#include "io/init.h"
#include "recorder.h"
#include "show/notes.h"

namespace test_attention {

using mha::Shape;
using mha::Strides;
using mha::Tensor;

namespace {

constexpr double hand_tolerance = 1e-5;  // hand arithmetic kept to 5-6 digits

using test::Recorder;

Tensor identity(std::size_t n) {
    Tensor t({n, n});
    for (std::size_t i = 0; i < n; ++i) t.data()[i * n + i] = 1.0f;
    return t;
}

mha::ForwardResult run(const mha::Weights& w, const mha::Inputs& in, const mha::Masks& masks,
                       std::size_t heads, std::size_t threads, mha::Tracer& tracer) {
    mha::ForwardOptions options;
    options.heads = heads;
    options.threads = threads;
    return mha::forward(w, in, masks, options, tracer);
}

mha::Sizes sizes(std::size_t B, std::size_t N, std::size_t M, std::size_t E, std::size_t h) {
    return {B, N, M, E, E, E, h, h, E / h};
}

}  // namespace

TEST_CASE("one head, identity weights: the arithmetic by hand") {
    // x = [[1, 0], [0, 1]] (B=1, N=2, d_model=2), h=1, every W = I, no bias, so Q = K = V = x.
    // scores = Q K^T = I; scaled by 1/sqrt(2): [[0.70711, 0], [0, 0.70711]]
    // softmax row 0: [e^0.70711, 1] / (e^0.70711 + 1) = [2.02811, 1] / 3.02811 = [0.66976, 0.33024]
    // context = weights V = weights (V = I); output = context W_o^T = context.
    mha::Weights w;
    w.w_q = w.w_k = w.w_v = w.w_o = identity(2);
    const Tensor x({1, 2, 2}, {1, 0, 0, 1});
    mha::NullTracer none;
    const mha::ForwardResult r = run(w, {x, x, x}, {}, 1, 1, none);
    const std::vector<float> expected = {0.66976f, 0.33024f, 0.33024f, 0.66976f};
    test::require_close(r.weights, Tensor({1, 1, 2, 2}, expected), hand_tolerance);
    test::require_close(r.output, Tensor({1, 2, 2}, expected), hand_tolerance);
}

TEST_CASE("every step has the shape, strides and cost the walkthrough gives") {
    const auto [B, N, M, E, h] = GENERATE(
        table<std::size_t, std::size_t, std::size_t, std::size_t, std::size_t>({{2, 8, 8, 256, 4},
                                                                                {1, 1, 1, 8, 1},
                                                                                {3, 5, 7, 12, 3},
                                                                                {2, 4, 9, 16, 8},
                                                                                {1, 6, 2, 32, 2}}));
    CAPTURE(B, N, M, E, h);
    const std::size_t d_k = E / h;
    const mha::Inputs in = mha::seeded_inputs(sizes(B, N, M, E, h), N == M, 1);
    Recorder rec;
    run(mha::seeded_weights(E, true, false, 1), in, {}, h, 2, rec);

    CHECK(rec.find(1, "Q").shape == Shape{B, N, E});
    CHECK(rec.find(2, "K").shape == Shape{B, M, E});
    CHECK(rec.find(3, "V").shape == Shape{B, M, E});
    CHECK(rec.find(4, "Q").shape == Shape{B, N, h, d_k});
    CHECK(rec.find(4, "K").shape == Shape{B, M, h, d_k});
    CHECK(rec.find(5, "Q").shape == Shape{B, h, N, d_k});
    CHECK(rec.find(5, "Q").strides == Strides{N * E, d_k, E, 1});
    CHECK(rec.find(5, "V").shape == Shape{B, h, M, d_k});
    for (int step : {6, 7, 8, 9}) CHECK(rec.find(step).shape == Shape{B, h, N, M});
    CHECK(rec.find(10).shape == Shape{B, h, N, d_k});
    CHECK(rec.find(11).shape == Shape{B, N, h, d_k});
    CHECK(rec.find(11).strides == Strides{h * N * d_k, d_k, N * d_k, 1});
    CHECK(rec.find(12).strides == Strides{N * E, E, d_k, 1});
    CHECK(rec.find(13).shape == Shape{B, N, E});
    CHECK(rec.find(14).shape == Shape{B, N, E});

    const bool moved = h > 1 && N > 1;  // with one head or one query the transpose keeps the layout
    CHECK(rec.find(5, "Q").contiguous == !moved);
    CHECK(rec.find(11).contiguous == !moved);
    CHECK(rec.find(12).contiguous);
    CHECK(rec.find(12).copied_bytes == (moved ? B * N * E * sizeof(float) : 0));
    std::uint64_t copied = 0;
    for (const mha::Step& s : rec.steps) copied += s.copied_bytes;
    CHECK(copied == rec.find(12).copied_bytes);  // the one copy

    CHECK(rec.find(1).macs == B * N * E * E);
    CHECK(rec.find(2).macs == B * M * E * E);
    CHECK(rec.find(6).macs == B * h * N * M * d_k);
    CHECK(rec.find(10).macs == B * h * N * M * d_k);
    CHECK(rec.find(14).macs == B * N * E * E);
    CHECK(rec.find(9).macs == 0);
}

TEST_CASE("the steps come in order 0..14, Q, K and V reported at 4 and 5") {
    const mha::Inputs in = mha::seeded_inputs(sizes(2, 8, 8, 256, 4), true, 0);
    Recorder rec;
    run(mha::seeded_weights(256, true, false, 0), in, {}, 4, 2, rec);
    std::vector<std::string> order;
    for (const mha::Step& s : rec.steps) order.push_back(std::to_string(s.number) + s.tensor);
    CHECK(order == std::vector<std::string>{"0x", "1Q", "2K", "3V", "4Q", "4K", "4V", "5Q", "5K",
                                            "5V", "6scores", "7scores", "8scores", "9weights",
                                            "10context", "11context", "12context", "13concat",
                                            "14output"});
}

TEST_CASE("weights are a distribution over the keys") {
    const mha::Inputs in = mha::seeded_inputs(sizes(2, 5, 5, 16, 4), true, 3);
    mha::NullTracer none;
    const mha::ForwardResult r = run(mha::seeded_weights(16, true, true, 3), in, {}, 4, 1, none);
    const std::vector<float> w = r.weights.to_vector();
    for (std::size_t row = 0; row < w.size() / 5; ++row) {
        double sum = 0;
        for (std::size_t j = 0; j < 5; ++j) sum += w[row * 5 + j];
        CHECK(sum == Approx(1.0).margin(hand_tolerance));
    }
}

TEST_CASE("output is bit-identical for every thread count, traced or not") {
    const mha::Sizes s = sizes(3, 5, 7, 24, 6);  // N < M: causal leaves every row a key
    const mha::Inputs in = mha::seeded_inputs(s, false, 9);
    const mha::Weights w = mha::seeded_weights(24, true, true, 9);
    mha::Masks masks;
    masks.causal = true;
    mha::NullTracer none;
    const mha::ForwardResult one = run(w, in, masks, 6, 1, none);
    const std::size_t threads = GENERATE(2, 3, 4, 18, 64);
    Recorder rec;
    const mha::ForwardResult many = run(w, in, masks, 6, threads, rec);
    CHECK(many.output.to_vector() == one.output.to_vector());
    CHECK(many.weights.to_vector() == one.weights.to_vector());
}

TEST_CASE("bit-identical for every thread count where the work is large enough to be shared") {
    // 2·4 units of 2·128·128·64 multiply-adds, projections of 256 rows x 256 x 256: past
    // min_shared_macs for 5 threads, so the products and the attention really split;
    // self-attention (the fused Q, K, V product) and cross-attention, on both paths.
    const bool self = GENERATE(true, false);
    const mha::AttentionPath path =
        GENERATE(mha::AttentionPath::Standard, mha::AttentionPath::Streaming);
    CAPTURE(self, path == mha::AttentionPath::Standard);
    const mha::Sizes s = sizes(2, 128, 128, 256, 4);
    REQUIRE(2 * 4 * 128 * 128 * 2 * 64 >= 5 * mha::min_shared_macs);
    const mha::Inputs in = mha::seeded_inputs(s, self, 5);
    const mha::Weights w = mha::seeded_weights(256, true, true, 5);
    mha::Masks masks;
    masks.causal = true;
    mha::ForwardOptions options;
    options.heads = 4;
    options.path = path;
    mha::NullTracer none;
    options.threads = 1;
    const mha::ForwardResult one = mha::forward(w, in, masks, options, none);
    for (std::size_t threads : {2, 3, 5}) {
        CAPTURE(threads);
        options.threads = threads;
        const mha::ForwardResult many = mha::forward(w, in, masks, options, none);
        CHECK(many.output.to_vector() == one.output.to_vector());
        CHECK(many.weights.to_vector() == one.weights.to_vector());
    }
}

TEST_CASE("causal with N < M leaves the last N positions' pattern; the trace draws it") {
    const mha::Inputs in = mha::seeded_inputs(sizes(1, 2, 4, 8, 2), false, 4);
    mha::Masks masks;
    masks.causal = true;
    Recorder rec;
    const mha::ForwardResult r = run(mha::seeded_weights(8, true, false, 4), in, masks, 2, 1, rec);
    // query 0 sees keys 0..2, query 1 sees 0..3
    CHECK(r.weights.at({0, 1, 0, 3}) == 0.0f);
    CHECK(r.weights.at({0, 1, 0, 2}) > 0.0f);
    CHECK(r.weights.at({0, 1, 1, 3}) > 0.0f);
    const mha::Step& mask = rec.find(8);
    CHECK(mask.allowed ==
          std::vector<std::vector<bool>>{{true, true, true, false}, {true, true, true, true}});
    CHECK_THAT(mha::step_notes(mask).at(0), Catch::Contains("bottom-right"));
}

TEST_CASE("fully masked rows are counted: NaN by default, zeros on request") {
    const mha::Inputs in = mha::seeded_inputs(sizes(1, 3, 2, 8, 2), false, 5);
    mha::Masks masks;
    masks.causal = true;  // N = 3 > M = 2: query 0 sees no key
    mha::ForwardOptions options;
    options.heads = 2;
    mha::NullTracer none;
    const mha::Weights w = mha::seeded_weights(8, true, false, 5);
    const mha::ForwardResult nan = mha::forward(w, in, masks, options, none);
    CHECK(nan.fully_masked_rows == 2);  // one row in each of 2 heads
    CHECK(std::isnan(nan.weights.at({0, 0, 0, 0})));
    CHECK(std::isnan(nan.output.at({0, 0, 0})));
    options.zero_masked_rows = true;
    const mha::ForwardResult zero = mha::forward(w, in, masks, options, none);
    CHECK(zero.weights.at({0, 1, 0, 1}) == 0.0f);
    CHECK_FALSE(std::isnan(zero.output.at({0, 0, 0})));
}

TEST_CASE("per-head masks reach their own head") {
    const std::size_t B = 2, N = 2, M = 2, h = 2;
    const mha::Inputs in = mha::seeded_inputs(sizes(B, N, M, 4, h), true, 6);
    const float inf = std::numeric_limits<float>::infinity();
    mha::Masks masks;  // (B*h, N, M): unit b*h + i blocks key i for every query, except unit 3
    masks.attn_mask =
        Tensor({B * h, N, M}, {-inf, 0, -inf, 0, 0, -inf, 0, -inf, -inf, 0, -inf, 0, 0, 0, 0, 0});
    mha::NullTracer none;
    const mha::ForwardResult r = run(mha::seeded_weights(4, true, false, 6), in, masks, h, 1, none);
    CHECK(r.weights.at({0, 0, 1, 0}) == 0.0f);
    CHECK(r.weights.at({0, 1, 1, 1}) == 0.0f);
    CHECK(r.weights.at({1, 0, 0, 0}) == 0.0f);
    CHECK(r.weights.at({1, 1, 0, 0}) > 0.0f);
}

TEST_CASE("shape errors name the tensor and the shape expected") {
    const mha::Weights w = mha::seeded_weights(16, true, false, 0);
    const mha::Inputs in = mha::seeded_inputs(sizes(2, 3, 3, 16, 4), true, 0);
    mha::Masks none;
    REQUIRE_THROWS_WITH(mha::check_shapes(w, in, none, 5),
                        Catch::Contains("not divisible by heads 5"));
    const Tensor wrong({2, 3, 8});
    REQUIRE_THROWS_WITH(mha::check_shapes(w, {wrong, wrong, wrong}, none, 4),
                        Catch::Contains("query") && Catch::Contains("(2, 3, 8)"));
    mha::Masks bad;
    bad.attn_mask = Tensor({3, 4});
    REQUIRE_THROWS_WITH(mha::check_shapes(w, in, bad, 4),
                        Catch::Contains("attn_mask") && Catch::Contains("(3, 3)"));
    mha::Masks padding;
    padding.key_padding = Tensor({3, 3});
    REQUIRE_THROWS_WITH(mha::check_shapes(w, in, padding, 4), Catch::Contains("key_padding_mask"));
}

TEST_CASE("seeded values are reproducible and have the intended scale") {
    const mha::Weights a = mha::seeded_weights(64, true, false, 42);
    const mha::Weights b = mha::seeded_weights(64, true, false, 42);
    CHECK(a.w_q.to_vector() == b.w_q.to_vector());
    CHECK(a.w_q.to_vector() != mha::seeded_weights(64, true, false, 43).w_q.to_vector());
    const float bound = std::sqrt(6.0f / 128.0f);  // xavier: sqrt(6 / (fan_in + fan_out))
    for (float v : a.w_o.to_vector()) CHECK(std::fabs(v) <= bound);
    for (float v : a.b_q.to_vector()) CHECK(v == 0.0f);
    CHECK(a.parameter_count() == 4 * 64 * 64 + 4 * 64);
    // standard-normal inputs: mean near 0, variance near 1 over 64k values
    const Tensor x = mha::seeded_inputs(sizes(1, 1024, 1024, 64, 1), true, 7).x_q;
    double sum = 0, squares = 0;
    for (float v : x.to_vector()) {
        sum += v;
        squares += double(v) * v;
    }
    const double mean = sum / x.numel();
    CHECK(std::fabs(mean) < 0.02);
    CHECK(squares / x.numel() - mean * mean == Approx(1.0).margin(0.03));
}

TEST_CASE("an untraced run builds no Step at all") {
    // A tracer that is not listening must never be handed a step.
    class Deaf : public mha::Tracer {
    public:
        bool enabled() const override { return false; }
        void on_step(const mha::Step&) override { ++calls; }
        int calls = 0;
    } deaf;
    const mha::Inputs in = mha::seeded_inputs(sizes(1, 3, 3, 8, 2), true, 2);
    mha::Masks masks;
    masks.causal = true;
    run(mha::seeded_weights(8, true, false, 2), in, masks, 2, 2, deaf);
    CHECK(deaf.calls == 0);
}

TEST_CASE("a (B, N, M) mask applies to every head of its batch") {
    const std::size_t B = 2, N = 2, M = 2, h = 2;
    const mha::Inputs in = mha::seeded_inputs(sizes(B, N, M, 4, h), true, 8);
    const float inf = std::numeric_limits<float>::infinity();
    mha::Masks masks;  // batch 0: nothing blocked; batch 1: key 0 blocked for both queries
    masks.attn_mask = Tensor({B, N, M}, {0, 0, 0, 0, -inf, 0, -inf, 0});
    mha::NullTracer none;
    const mha::ForwardResult r = run(mha::seeded_weights(4, true, false, 8), in, masks, h, 2, none);
    for (std::size_t head = 0; head < h; ++head) {
        for (std::size_t n = 0; n < N; ++n) {
            CHECK(r.weights.at({0, head, n, 0}) > 0.0f);
            CHECK(r.weights.at({1, head, n, 0}) == 0.0f);
            CHECK(r.weights.at({1, head, n, 1}) == 1.0f);
        }
    }
}

}  // namespace test_attention
