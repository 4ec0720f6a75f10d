// Scores beyond float32: finite inputs whose q·k passes FLT_MAX are never taken for masking.
// Where q·k/sqrt(d_k) still fits, every form computes the answer (forming the scores as
// PyTorch does, (q/sqrt(d_k)) kᵀ); where it does not, the run stops with the position.

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "core/attention.h"
#include "core/decode.h"
#include "core/error.h"
#include "core/per_head.h"
#include "helpers.h"

using mha::Tensor;

namespace {

// d_model 4, one head (d_k 4, factor 1/2), identity projections without bias.
mha::Weights identity_weights() {
    std::vector<float> eye(16, 0.0f);
    for (std::size_t i = 0; i < 4; ++i) eye[i * 4 + i] = 1.0f;
    mha::Weights w;
    w.w_q = Tensor({4, 4}, eye);
    w.w_k = Tensor({4, 4}, eye);
    w.w_v = Tensor({4, 4}, eye);
    w.w_o = Tensor({4, 4}, eye);
    return w;
}

mha::Inputs self_attention(const Tensor& x) { return {x, x, x}; }

enum class Form { Standard, StandardTraced, Streaming, PerHead, PerHeadTraced, Decode };

// Records nothing but asks the pass to run its steps one by one.
class StepTracer : public mha::Tracer {
public:
    void on_step(const mha::Step&) override {}
};

mha::ForwardResult run(Form form, const Tensor& x, bool scaled = true) {
    const mha::Weights w = identity_weights();
    mha::ForwardOptions o;
    o.heads = 1;
    o.scale = scaled;
    o.path = form == Form::Streaming ? mha::AttentionPath::Streaming : mha::AttentionPath::Standard;
    mha::NullTracer none;
    StepTracer steps;
    const bool traced = form == Form::StandardTraced || form == Form::PerHeadTraced;
    mha::Tracer& tracer = traced ? static_cast<mha::Tracer&>(steps) : none;
    switch (form) {
        case Form::PerHead:
        case Form::PerHeadTraced: return mha::forward_per_head(w, self_attention(x), {}, o, tracer);
        case Form::Decode: return mha::decode(w, self_attention(x), {}, o, tracer);
        default: return mha::forward(w, self_attention(x), {}, o, tracer);
    }
}

}  // namespace

TEST_CASE("q·k beyond FLT_MAX is computed where q·k/sqrt(d_k) fits, in every form") {
    // x0 = (1, 1, 1, 1)·1e19, x1 = (1, 1, 1, -1)·1e19; Q = K = V = x. The raw products
    // q0·k0 = q1·k1 = 4e38 pass FLT_MAX (3.4e38), q0·k1 = 2e38; scaled by 1/sqrt(4) they are
    // 2e38 and 1e38, finite. softmax((2e38, 1e38)) = (1, e^-1e38 = 0), so each query attends
    // only to itself (decode's query 0 sees only key 0 anyway): weights = I, output = x.
    const Tensor x({1, 2, 4}, {1e19f, 1e19f, 1e19f, 1e19f, 1e19f, 1e19f, 1e19f, -1e19f});
    const Form form = GENERATE(Form::Standard, Form::StandardTraced, Form::Streaming,
                               Form::PerHead, Form::PerHeadTraced, Form::Decode);
    CAPTURE(int(form));
    const mha::ForwardResult r = run(form, x);
    CHECK(r.fully_masked_rows == 0);
    CHECK(r.output.to_vector() == x.to_vector());
    if (!r.weights.empty()) CHECK(r.weights.to_vector() == std::vector<float>{1, 0, 0, 1});
}

TEST_CASE("a score beyond FLT_MAX even scaled stops the run with its position") {
    // x1 = (2, 2, 2, 2)·1e19: q1·k1 = 1.6e39, scaled 8e38 > FLT_MAX; q0·k0 = 4e38 -> 2e38 fits,
    // q0·k1 = q1·k0 = 8e38 -> 4e38 does not: the first such score is query 0, key 1.
    const Tensor x({1, 2, 4}, {1e19f, 1e19f, 1e19f, 1e19f, 2e19f, 2e19f, 2e19f, 2e19f});
    const Form form = GENERATE(Form::Standard, Form::StandardTraced, Form::Streaming,
                               Form::PerHead, Form::PerHeadTraced, Form::Decode);
    CAPTURE(int(form));
    // decode reaches query 1 first with key 0 (query 0 sees only key 0, which fits)
    const std::string position =
        form == Form::Decode ? "query 1, key 0" : "query 0, key 1";
    REQUIRE_THROWS_WITH(run(form, x), Catch::Contains("head 0, " + position +
                                                      " overflows float32: q·k times the scale "
                                                      "0.5 is 4e+38"));
}

TEST_CASE("without the scale, q·k beyond FLT_MAX is an overflow, not a mask") {
    // --no-scale: q0·k0 = 4e38 itself is the score.
    const Tensor x({1, 2, 4}, {1e19f, 1e19f, 1e19f, 1e19f, 1e19f, 1e19f, 1e19f, -1e19f});
    REQUIRE_THROWS_WITH(run(Form::Standard, x, false),
                        Catch::Contains("query 0, key 0 overflows float32: q·k times the scale 1 "
                                        "is 4e+38"));
}

TEST_CASE("a projection that overflows float32 is named, not masked") {
    // W_q = 2·I and x0 = (3e38, 0, 0, 0): q0 = (6e38, 0, 0, 0) is inf in float32.
    mha::Weights w = identity_weights();
    for (std::size_t i = 0; i < 4; ++i) w.w_q.data()[i * 4 + i] = 2.0f;
    const Tensor x({1, 1, 4}, {3e38f, 0.0f, 0.0f, 0.0f});
    mha::ForwardOptions o;
    mha::NullTracer none;
    REQUIRE_THROWS_WITH(mha::forward(w, self_attention(x), {}, o, none),
                        "Q overflows float32 at batch 0, head 0, position 0: the inputs or "
                        "weights are too large for float32");
}
