// Grouped-query and multi-query attention: the head mapping, equality with
// ordinary multi-head attention whose K/V heads are repeated, the trace, errors.

#include <catch2/catch.hpp>

#include "core/kv_heads.h"
#include "core/pass/attention.h"
#include "core/pass/shape_checks.h"
#include "helpers.h"
#include "io/init.h"
#include "recorder.h"
#include "show/notes.h"

namespace test_kv_heads {

using mha::Shape;
using mha::Tensor;

namespace {

constexpr double same_tolerance = 1e-6;  // the same sums in the same order: float rounding only

using test::Recorder;

// (G·d_k, ...) rows of a K/V weight or bias with every head's d_k rows repeated `group`
// times: the weights of ordinary multi-head attention that computes the same thing.
Tensor repeat_heads(const Tensor& t, std::size_t d_k, std::size_t group) {
    const std::size_t row = t.numel() / t.size(0);  // elements per row (1 for a bias)
    const std::vector<float> values = t.to_vector();
    std::vector<float> repeated;
    for (std::size_t head = 0; head < t.size(0) / d_k; ++head) {
        for (std::size_t copy = 0; copy < group; ++copy) {
            repeated.insert(repeated.end(), values.begin() + head * d_k * row,
                            values.begin() + (head + 1) * d_k * row);
        }
    }
    Shape shape = t.shape();
    shape[0] *= group;
    return Tensor(shape, repeated);
}

mha::ForwardResult run(const mha::Weights& w, const mha::Inputs& in, std::size_t heads,
                       mha::Tracer& tracer, bool causal = false) {
    mha::ForwardOptions options;
    options.heads = heads;
    options.threads = 2;
    mha::Masks masks;
    masks.causal = causal;
    return mha::forward(w, in, masks, options, tracer);
}

}  // namespace

TEST_CASE("query head i reads key/value head i / (h / G), as repeat_interleave pairs them") {
    CHECK(mha::kv_head_of(0, 8, 2) == 0);
    CHECK(mha::kv_head_of(3, 8, 2) == 0);
    CHECK(mha::kv_head_of(4, 8, 2) == 1);
    CHECK(mha::kv_head_of(7, 8, 2) == 1);
    CHECK(mha::kv_head_of(5, 8, 8) == 5);  // MHA: every head its own
    CHECK(mha::kv_head_of(7, 8, 1) == 0);  // MQA: one for all
    mha::Step k;
    k.facts.kv_head_of_query = {0, 0, 1, 1};
    CHECK(mha::step_notes(k) == std::vector<std::string>{"query heads 0-1 read K/V head 0",
                                                         "query heads 2-3 read K/V head 1"});
}

TEST_CASE("GQA equals multi-head attention with every K/V head repeated h / G times") {
    const auto [h, G, causal] = GENERATE(table<std::size_t, std::size_t, bool>(
        {{4, 2, false}, {4, 1, true}, {6, 3, true}, {8, 8, false}}));
    CAPTURE(h, G, causal);
    const std::size_t E = 24, d_k = E / h, group = h / G;
    const mha::Weights gqa = mha::seeded_weights(E, G * d_k, true, true, 11);
    mha::Weights full = gqa;
    full.w_k = repeat_heads(gqa.w_k, d_k, group);
    full.w_v = repeat_heads(gqa.w_v, d_k, group);
    full.b_k = repeat_heads(gqa.b_k, d_k, group);
    full.b_v = repeat_heads(gqa.b_v, d_k, group);
    const mha::Inputs in = mha::seeded_inputs({2, 5, 5, E, E, E, h, h, E / h}, true, 4);
    mha::NullTracer none;
    const mha::ForwardResult a = run(gqa, in, h, none, causal);
    const mha::ForwardResult b = run(full, in, h, none, causal);
    test::require_close(a.weights, b.weights, same_tolerance);
    test::require_close(a.output, b.output, same_tolerance);
    CHECK(gqa.parameter_count() == full.parameter_count() - 2 * (h - G) * d_k * (E + 1));
}

TEST_CASE("the trace shows K and V with G heads and who shares them") {
    const std::size_t B = 2, N = 3, E = 16, h = 4, G = 2, d_k = 4;
    Recorder rec;
    run(mha::seeded_weights(E, G * d_k, true, false, 0),
        mha::seeded_inputs({B, N, N, E, E, E, h, G, E / h}, true, 0), h, rec);
    std::vector<Shape> k_shapes;
    std::vector<std::string> notes;
    for (const mha::Step& s : rec.steps) {
        if (s.tensor == "K") k_shapes.push_back(s.shape);
        const std::vector<std::string> words = mha::step_notes(s);
        notes.insert(notes.end(), words.begin(), words.end());
    }
    CHECK(k_shapes == std::vector<Shape>{{B, N, G * d_k}, {B, N, G, d_k}, {B, G, N, d_k}});
    CHECK(rec.steps[2].macs == B * N * G * d_k * E);
    const std::string all = [&] {
        std::string text;
        for (const std::string& n : notes) text += n + "\n";
        return text;
    }();
    CHECK_THAT(all, Catch::Contains("query heads 2-3 read K/V head 1") &&
                        Catch::Contains("K.repeat_interleave(2, dim=1)") &&
                        // 2·16² + 2·16·16 = 1024; 512 + 2·8·16 = 768; 512 + 2·4·16 = 640
                        Catch::Contains("MHA G=4: 1,024 weights; cache 128 B/token") &&
                        Catch::Contains("GQA G=2 (this run): 768 weights; cache 64 B/token") &&
                        Catch::Contains("MQA G=1: 640 weights; cache 32 B/token, "
                                        "96 B/sequence of M=3"));
}

TEST_CASE("W_k and W_v that are not whole heads are refused") {
    mha::Weights w = mha::seeded_weights(16, 6, true, false, 0);  // 6 rows, d_k = 4
    const mha::Inputs in = mha::seeded_inputs({1, 2, 2, 16, 16, 16, 4, 4, 4}, true, 0);
    REQUIRE_THROWS_WITH(mha::check_shapes(w, in, {}, 4),
                        Catch::Contains("must both have G·d_k rows (d_k = 4)"));
    w = mha::seeded_weights(16, 12, true, false, 0);  // G = 3 does not divide h = 4
    REQUIRE_THROWS_WITH(mha::check_shapes(w, in, {}, 4),
                        Catch::Contains("3 key/value heads do not divide 4 heads"));
}

TEST_CASE("--kv-heads on the command line") {
    SECTION("the header shows G and the parameters shrink") {
        const test::RunResult r = test::run_mha("-d 16 -H 4 --kv-heads 1 -n 3");
        REQUIRE(r.status == 0);
        CHECK_THAT(r.output, Catch::Contains("h=4  d_k=4  G=1") &&
                                 Catch::Contains("parameters: 680"));  // 2·(16·16+16) + 2·(4·16+4)
    }
    SECTION("bad values are one-line errors") {
        const auto [args, message] = GENERATE(table<std::string, std::string>({
            {"-H 4 --kv-heads 3", "3 key/value heads do not divide 4 heads"},
            {"-H 4 --kv-heads 0", "--kv-heads must be at least 1, got 0"},
            {"-H 4 --kv-heads 8", "8 key/value heads do not divide 4 heads"},
            {"--weights data/parity/gqa/weights.npz --heads 4 --kv-heads 4",
             "--kv-heads 4 disagrees with data/parity/gqa/weights.npz, which has G=2"},
            {"--weights data/parity/gqa/weights.npz --heads 1",
             "W_k has 8 rows, not a whole number of heads of d_k = 16"},
        }));
        CAPTURE(args);
        const test::RunResult r = test::run_mha(args);
        CHECK(r.status == 2);
        CHECK_THAT(r.output, Catch::StartsWith("mha: error: ") && Catch::Contains(message));
    }
}

}  // namespace test_kv_heads
