// Tests for the demo heads (each head's argmax pattern on sentences), head
// ablation and --no-scale, on the forward pass itself.

#include <catch2/catch.hpp>
#include <cmath>

#include "core/error.h"
#include "core/pass/attention.h"
#include "helpers.h"
#include "io/demo_heads.h"
#include "io/init.h"
#include "io/text.h"
#include "show/head_summary.h"

namespace test_demo_heads {

using namespace mha;

namespace {

constexpr float sharp_weight = 0.95f;  // the demo heads put at least this on their key
constexpr double even_margin = 1e-6;   // head 3's weights are exactly 1/(i+1) up to rounding

ForwardResult run_demo(const std::vector<std::string>& tokens, std::size_t d_model) {
    const Tensor x = text_input(tokens, d_model);
    Masks masks;
    masks.causal = true;
    ForwardOptions options;
    options.heads = demo_head_count;
    NullTracer quiet;
    return forward(demo_weights(d_model, demo_head_count, tokens.size()), Inputs{x, x, x}, masks,
                   options, quiet);
}

// The earliest position holding the same token (case-insensitive), or i itself.
std::size_t first_copy(const std::vector<std::string>& tokens, std::size_t i) {
    for (std::size_t j = 0; j < i; ++j) {
        if (token_embedding(tokens[j], 4) == token_embedding(tokens[i], 4)) return j;
    }
    return i;
}

float weight(const ForwardResult& r, std::size_t head, std::size_t i, std::size_t j) {
    return r.weights.at({0, head, i, j});
}

// Head 2's weight on every key j <= i with the same token as query i.
float copies_weight(const ForwardResult& r, const std::vector<std::string>& tokens, std::size_t i) {
    float sum = 0.0f;
    for (std::size_t j = 0; j <= i; ++j) {
        if (first_copy(tokens, j) == first_copy(tokens, i)) sum += weight(r, 2, i, j);
    }
    return sum;
}

}  // namespace

TEST_CASE("each demo head's pattern holds on a sentence") {
    const std::string sentence =
        GENERATE(as<std::string>{}, "The cat that I saw yesterday sat on the mat",
                 "the dog chased the cat , and the cat chased the dog .", "a");
    const std::size_t d_model = GENERATE(as<std::size_t>{}, 256, 512);
    CAPTURE(sentence, d_model);
    const std::vector<std::string> tokens = tokenize(sentence);
    const ForwardResult r = run_demo(tokens, d_model);
    const std::vector<HeadPattern> patterns = head_patterns(r.weights);
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        CAPTURE(i);
        const std::size_t previous = i == 0 ? 0 : i - 1;
        CHECK(patterns[0].peaks[i] == previous);  // previous token (row 0 sees only itself)
        CHECK(weight(r, 0, i, previous) > sharp_weight);
        CHECK(patterns[1].peaks[i] == 0);  // first token
        CHECK(weight(r, 1, i, 0) > sharp_weight);
        CHECK(patterns[2].peaks[i] == first_copy(tokens, i));  // same token, earliest copy
        CHECK(copies_weight(r, tokens, i) > sharp_weight);
        for (std::size_t j = 0; j <= i; ++j)  // even over the keys it may see
            CHECK(weight(r, 3, i, j) == Approx(1.0 / double(i + 1)).margin(even_margin));
    }
}

TEST_CASE("demo heads refuse what they cannot build") {
    REQUIRE_THROWS_WITH(demo_weights(256, 2, 5), Catch::Contains("needs --heads 4"));
    REQUIRE_THROWS_WITH(demo_weights(128, 4, 5), Catch::Contains("at least 256"));
    REQUIRE_THROWS_WITH(demo_weights(258, 4, 5), Catch::Contains("multiple of 4"));
}

TEST_CASE(
    "ablating a head whose weights are zero changes nothing; another head changes the output") {
    Weights w = seeded_weights(16, true, true, 3);
    const std::size_t heads = 4, d_k = 4, dead = 2;
    for (std::size_t row = dead * d_k; row < (dead + 1) * d_k; ++row) {
        for (Tensor* t : {&w.w_q, &w.w_k, &w.w_v}) {
            for (std::size_t col = 0; col < 16; ++col) t->data()[row * 16 + col] = 0.0f;
        }
        for (Tensor* b : {&w.b_q, &w.b_k, &w.b_v}) b->data()[row] = 0.0f;
    }
    const Inputs in = seeded_inputs({2, 5, 5, 16, 16, 16, heads, heads, 16 / heads}, true, 3);
    ForwardOptions options;
    options.heads = heads;
    NullTracer quiet;
    const ForwardResult full = forward(w, in, {}, options, quiet);
    options.ablate_head = dead;
    CHECK(forward(w, in, {}, options, quiet).output.to_vector() == full.output.to_vector());
    options.ablate_head = 1;
    const ForwardResult without_1 = forward(w, in, {}, options, quiet);
    CHECK(test::max_difference(without_1.output.to_vector(), full.output.to_vector()).worst > 0.01);
    CHECK(without_1.weights.to_vector() == full.weights.to_vector());  // the softmax is untouched
    options.ablate_head = heads;
    REQUIRE_THROWS_WITH(forward(w, in, {}, options, quiet),
                        Catch::Contains("cannot ablate head 4"));
}

TEST_CASE("ablating a head gives the same output on the standard and the streaming path") {
    // the streaming context is a transposed view of (B, N, h, d_k): the head must be
    // zeroed through the strides, not as one contiguous plane
    const Weights w = seeded_weights(16, true, true, 4);
    const Inputs in = seeded_inputs({2, 5, 5, 16, 16, 16, 4, 4, 4}, true, 4);
    ForwardOptions options;
    options.heads = 4;
    options.ablate_head = 3;
    NullTracer quiet;
    options.path = AttentionPath::Standard;
    const ForwardResult standard = forward(w, in, {}, options, quiet);
    options.path = AttentionPath::Streaming;
    const ForwardResult streamed = forward(w, in, {}, options, quiet);
    test::require_close(streamed.output, standard.output, 1e-5);
}

TEST_CASE("--no-scale equals scaling W_q by sqrt(d_k) in advance") {
    // d_k = 16 / 4 = 4: the default divides q·k by sqrt(4) = 2, so W_q and b_q times 2
    // without the scale give the same scores; the powers of two keep it exact.
    const Weights w = seeded_weights(16, true, true, 5);
    Weights doubled = w;
    doubled.w_q = Tensor(w.w_q.shape(), w.w_q.to_vector());
    doubled.b_q = Tensor(w.b_q.shape(), w.b_q.to_vector());
    for (std::size_t i = 0; i < doubled.w_q.numel(); ++i) doubled.w_q.data()[i] *= 2.0f;
    for (std::size_t i = 0; i < doubled.b_q.numel(); ++i) doubled.b_q.data()[i] *= 2.0f;
    const Inputs in = seeded_inputs({1, 6, 6, 16, 16, 16, 4, 4, 4}, true, 5);
    ForwardOptions options;
    options.heads = 4;
    NullTracer quiet;
    const ForwardResult scaled = forward(doubled, in, {}, options, quiet);
    options.scale = false;
    const ForwardResult unscaled = forward(w, in, {}, options, quiet);
    CHECK(test::max_difference(scaled.weights.to_vector(), unscaled.weights.to_vector()).worst ==
          0.0);
}

}  // namespace test_demo_heads
