// Scores beyond float32: finite inputs whose q·k passes FLT_MAX are never taken for masking.
// Where q·k/sqrt(d_k) still fits, every form computes the answer (forming the scores as
// PyTorch does, (q/sqrt(d_k)) kᵀ); where it does not, the run stops with the position,
// before anything is printed: a bound from the largest inputs and weights says which runs
// may stop, and those are computed once before the report starts.

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/forms/decode.h"
#include "core/forms/mla_pass.h"
#include "core/forms/per_head.h"
#include "core/forms/score_bound.h"
#include "core/pass/attention.h"
#include "core/pass/mla.h"
#include "helpers.h"
#include "io/init.h"
#include "io/model_file.h"
#include "io/npy.h"

namespace test_overflow {

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
        case Form::PerHeadTraced:
            return mha::forward_per_head(w, self_attention(x), {}, o, tracer);
        case Form::Decode:
            return mha::decode(w, self_attention(x), {}, o, tracer);
        default:
            return mha::forward(w, self_attention(x), {}, o, tracer);
    }
}

}  // namespace

TEST_CASE("q·k beyond FLT_MAX is computed where q·k/sqrt(d_k) fits, in every form") {
    // x0 = (1, 1, 1, 1)·1e19, x1 = (1, 1, 1, -1)·1e19; Q = K = V = x. The raw products
    // q0·k0 = q1·k1 = 4e38 pass FLT_MAX (3.4e38), q0·k1 = 2e38; scaled by 1/sqrt(4) they are
    // 2e38 and 1e38, finite. softmax((2e38, 1e38)) = (1, e^-1e38 = 0), so each query attends
    // only to itself (decode's query 0 sees only key 0 anyway): weights = I, output = x.
    const Tensor x({1, 2, 4}, {1e19f, 1e19f, 1e19f, 1e19f, 1e19f, 1e19f, 1e19f, -1e19f});
    const Form form = GENERATE(Form::Standard, Form::StandardTraced, Form::Streaming, Form::PerHead,
                               Form::PerHeadTraced, Form::Decode);
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
    const Form form = GENERATE(Form::Standard, Form::StandardTraced, Form::Streaming, Form::PerHead,
                               Form::PerHeadTraced, Form::Decode);
    CAPTURE(int(form));
    // decode reaches query 1 first with key 0 (query 0 sees only key 0, which fits)
    const std::string position = form == Form::Decode ? "query 1, key 0" : "query 0, key 1";
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

TEST_CASE("a value that is not finite is found at any column of a wide head") {
    // d_model 16, one head, identity projections: Q = K = V = x. Rows of 16 are read eight
    // columns at a time, so column 11 sits in the second block of eight and column 2 in the
    // first; an infinity or a NaN at (row 2, that column) of x is Q's position 2.
    std::vector<float> eye(16 * 16, 0.0f);
    for (std::size_t i = 0; i < 16; ++i) eye[i * 16 + i] = 1.0f;
    mha::Weights w;
    w.w_q = w.w_k = w.w_v = w.w_o = Tensor({16, 16}, eye);
    const float bad =
        GENERATE(std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                 std::numeric_limits<float>::quiet_NaN());
    const std::size_t column = GENERATE(2, 11, 15);
    const auto path = GENERATE(mha::AttentionPath::Standard, mha::AttentionPath::Streaming);
    CAPTURE(bad, column, int(path));
    std::vector<float> values(3 * 16, 0.5f);
    values[2 * 16 + column] = bad;
    const Tensor x({1, 3, 16}, values);
    mha::ForwardOptions o;
    o.path = path;
    mha::NullTracer none;
    REQUIRE_THROWS_WITH(mha::forward(w, self_attention(x), {}, o, none),
                        "Q overflows float32 at batch 0, head 0, position 2: the inputs or "
                        "weights are too large for float32");
}

// ---- before anything is printed --------------------------------------------------------

namespace {

// x as a float32 .npy file (version 1.0, C order, the header padded to 64 bytes).
void write_npy(const std::string& path, const Tensor& x) {
    std::string shape;
    for (std::size_t size : x.shape()) shape += std::to_string(size) + ", ";
    std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + shape + "), }";
    dict += std::string(63 - (10 + dict.size()) % 64, ' ') + "\n";
    std::string bytes("\x93NUMPY\x01\x00", 8);
    bytes += char(dict.size() & 0xFF);
    bytes += char(dict.size() >> 8);
    const std::vector<float> values = x.to_vector();
    bytes += dict + std::string(reinterpret_cast<const char*>(values.data()), values.size() * 4);
    std::ofstream(path, std::ios::binary) << bytes;
}

// The identity weights above, as a from-scratch state dict.
std::string identity_state_dict() {
    const mha::Weights w = identity_weights();
    const std::string path = test::temp_path("identity.npz");
    mha::npy::write_npz(path, {{"W_q.weight", w.w_q},
                               {"W_k.weight", w.w_k},
                               {"W_v.weight", w.w_v},
                               {"W_o.weight", w.w_o}});
    return path;
}

// The same attention inside a post-LN block (from-scratch names): LayerNorms of gain 1 and
// shift 0, a feed-forward of identities; the block's attention reads x itself.
std::string identity_block_state_dict() {
    const mha::Weights w = identity_weights();
    const Tensor ones({4}, std::vector<float>(4, 1.0f)), zeros({4});
    const std::string path = test::temp_path("identity_block.npz");
    mha::npy::write_npz(path, {{"attn.W_q.weight", w.w_q},
                               {"attn.W_k.weight", w.w_k},
                               {"attn.W_v.weight", w.w_v},
                               {"attn.W_o.weight", w.w_o},
                               {"ln1.weight", ones},
                               {"ln1.bias", zeros},
                               {"ln2.weight", ones},
                               {"ln2.bias", zeros},
                               {"ffn.0.weight", w.w_q},
                               {"ffn.0.bias", zeros},
                               {"ffn.2.weight", w.w_q},
                               {"ffn.2.bias", zeros}});
    return path;
}

// Runs mha with args; stdout and stderr apart.
struct Printed {
    int status;
    std::string out, err;
};

Printed run_apart(const std::string& args) {
    const std::string err_path = test::temp_path("stderr.txt");
    const test::RunResult r =
        test::run_command(test::mha_binary() + " " + args + " 2>" + err_path + " </dev/null");
    std::ifstream file(err_path);
    const std::string err((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    std::remove(err_path.c_str());
    return {r.status, r.output, err};
}

// x with every value times s.
Tensor scaled(const Tensor& x, float s) {
    std::vector<float> values = x.to_vector();
    for (float& v : values) v *= s;
    return Tensor(x.shape(), values);
}

// A magnitude sweep through the edge of float32: each pass either runs or stops on overflow,
// and whenever it stops, the bound must have said it might.
struct Sweep {
    std::size_t stopped = 0, cleared = 0;

    template <class Pass>
    void run(bool may, Pass pass) {
        try {
            pass();
            cleared += may ? 0 : 1;
        } catch (const mha::Error& e) {
            CHECK_THAT(e.what(), Catch::Contains("overflows float32"));
            CHECK(may);
            ++stopped;
        }
    }

    // the sweep reached the edge from both sides
    void check_both_sides() const {
        CHECK(stopped > 0);
        CHECK(cleared > 0);
    }
};

}  // namespace

TEST_CASE("the bound clears ordinary inputs and every input that overflows it does not",
          "[overflow]") {
    mha::ForwardOptions o;
    o.heads = 4;
    const mha::Weights seeded = mha::seeded_weights(64, true, true, 3);
    const mha::Inputs ordinary = mha::seeded_inputs({2, 8, 8, 64, 64, 64, 4, 4, 16}, true, 3);
    // the seeded inputs and Xavier weights are of order 1: nothing to compute first
    CHECK_FALSE(mha::may_overflow(seeded, mha::largest_value(ordinary.x_q),
                                  mha::largest_value(ordinary.x_k), o));
    Sweep sweep;
    for (const float s : {1e15f, 1e16f, 1e17f, 3e17f, 1e18f, 3e18f, 1e19f}) {
        for (const bool rope : {false, true}) {
            CAPTURE(s, rope);
            const Tensor x = scaled(ordinary.x_q, s);
            mha::ForwardOptions options = o;
            if (rope) options.rope = mha::Rope{mha::RopeLayout::Half, 10000.0};
            const bool may =
                mha::may_overflow(seeded, mha::largest_value(x), mha::largest_value(x), options);
            sweep.run(may, [&] {
                mha::NullTracer none;
                mha::forward(seeded, {x, x, x}, {}, options, none);
            });
        }
    }
    sweep.check_both_sides();
}

TEST_CASE("LayerNorm's bound by hand", "[overflow]") {
    // gamma (1, 2, 0.5), beta (0, 1, -1), d = 3: sqrt(3)·2 + 1 = 4.4641016
    CHECK(mha::layer_norm_bound(Tensor({3}, {1, 2, 0.5f}), Tensor({3}, {0, 1, -1})) ==
          Approx(4.4641016).margin(1e-6));
    // a strided view: the largest |value| of the transpose of [[1, -7], [3, 2]]
    CHECK(mha::largest_value(Tensor({2, 2}, {1, -7, 3, 2}).transpose(0, 1)) == 7.0);
}

TEST_CASE("a run that stops on overflow prints nothing on stdout, in every form and format",
          "[overflow][cli]") {
    // the hand case above: query 0, key 1 overflows even scaled
    const std::string weights = identity_state_dict(), input = test::temp_path("overflow.npy");
    write_npy(input, Tensor({1, 2, 4}, {1e19f, 1e19f, 1e19f, 1e19f, 2e19f, 2e19f, 2e19f, 2e19f}));
    const std::string options =
        GENERATE(as<std::string>{}, "", " --trace", " --trace --values", " --format json",
                 " --format markdown", " --step", " --per-head --trace", " --fused-qkv --trace",
                 " --attention streaming --trace", " --decode 2 --trace", " --block post --trace",
                 " --format html --output " + test::temp_path("overflow.html"));
    const bool block = options == " --block post --trace";
    const std::string state_dict = block ? identity_block_state_dict() : weights;
    const Printed r =
        run_apart("--weights " + state_dict + " --input " + input + " -H 1" + options);
    CAPTURE(options, r.err);
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::StartsWith("mha: error: the score of batch 0, head 0, query ") &&
                          Catch::Contains("overflows float32"));
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    std::remove(input.c_str());
    std::remove(weights.c_str());
    if (block) std::remove(state_dict.c_str());
    CHECK_FALSE(std::ifstream(test::temp_path("overflow.html")).good());  // no page either
}

TEST_CASE("a run the bound cannot clear, but that fits, prints its whole trace",
          "[overflow][cli]") {
    // the first hand case: q·k passes FLT_MAX, q·k/sqrt(d_k) does not; output = x
    const std::string weights = identity_state_dict(), input = test::temp_path("fits.npy");
    const Tensor x({1, 2, 4}, {1e19f, 1e19f, 1e19f, 1e19f, 1e19f, 1e19f, 1e19f, -1e19f});
    write_npy(input, x);
    const std::string options = GENERATE(as<std::string>{}, " --trace", " --decode 2 --trace");
    const std::string saved = test::temp_path("fits.npz");
    const Printed r = run_apart("--weights " + weights + " --input " + input + " -H 1" + options +
                                " --save " + saved);
    CAPTURE(options, r.err);
    CHECK(r.status == 0);
    CHECK(r.err.empty());
    CHECK_THAT(r.out, Catch::StartsWith("mha: multi-head attention, step by step") &&
                          Catch::Contains("\n14  project") && Catch::Contains("wall time"));
    CHECK(mha::npy::to_tensor(mha::npy::read_npz(saved).at("output")).to_vector() == x.to_vector());
    std::remove(saved.c_str());
    std::remove(input.c_str());
    std::remove(weights.c_str());
}

TEST_CASE("the model's bound: each layer attends over its LayerNorm's output",
          "[overflow][model]") {
    mha::Model model = mha::load_model("../examples/models/kjv-2x4.npz", std::uint64_t(1) << 30);
    CHECK_FALSE(mha::may_overflow(model));  // a trained model: nothing to compute first
    // layer 1's W_q and W_k times 1e20: its scores pass float32's range whatever the text
    for (mha::Tensor* w : {&model.layers[1].attention.w_q, &model.layers[1].attention.w_k}) {
        for (std::size_t i = 0; i < w->numel(); ++i) w->data()[i] *= 1e20f;
    }
    CHECK(mha::may_overflow(model));
    mha::NullTracer none;
    REQUIRE_THROWS_WITH(mha::forward_model(model, {1, 2, 3, 4}, 0, 1, none),
                        Catch::Contains("head") && Catch::Contains("overflows float32"));
}

TEST_CASE(
    "MLA: the bound clears ordinary inputs; every run that stops was flagged, and none "
    "that runs gives a value that is not finite",
    "[overflow][mla]") {
    const mha::MlaSizes sizes = mha::seeded_mla_sizes(32, 4, 16, 4);
    const mha::MlaWeights w = mha::seeded_mla_weights(sizes, 5);
    const mha::Inputs ordinary = mha::seeded_inputs({1, 6, 6, 32, 32, 32, 4, 4, 8}, true, 5);
    mha::ForwardOptions options;
    options.heads = 4;
    options.rope = mha::Rope{mha::RopeLayout::Half, 10000.0};
    mha::Masks masks;
    masks.causal = true;
    CHECK_FALSE(mha::may_overflow(w, 4, mha::largest_value(ordinary.x_q)));
    Sweep sweep;
    for (const float s : {1e10f, 1e15f, 1e17f, 1e18f, 1e19f, 1e25f, 1e30f, 1e36f}) {
        const Tensor x = scaled(ordinary.x_q, s);
        const bool may = mha::may_overflow(w, 4, mha::largest_value(x));
        for (const mha::MlaForm form : {mha::MlaForm::Naive, mha::MlaForm::Absorbed}) {
            CAPTURE(s, form == mha::MlaForm::Naive);
            sweep.run(may, [&] {
                const mha::MlaResult r = mha::mla_forward(w, x, masks, options, form);
                const std::vector<float> out = r.output.to_vector(), p = r.weights.to_vector();
                CHECK(
                    std::all_of(out.begin(), out.end(), [](float v) { return std::isfinite(v); }));
                CHECK(std::all_of(p.begin(), p.end(), [](float v) { return std::isfinite(v); }));
            });
        }
    }
    sweep.check_both_sides();
}

TEST_CASE("MLA: a run that stops on overflow prints nothing on stdout", "[overflow][mla][cli]") {
    const std::string input = test::temp_path("overflow_mla.npy");
    write_npy(input, Tensor({1, 2, 4}, {3e37f, 3e37f, 3e37f, 3e37f, -3e37f, 3e37f, 3e37f, 3e37f}));
    const std::string options = GENERATE(as<std::string>{}, "", " --trace", " --format json");
    const Printed r = run_apart("--form mla --input " + input + " -H 2" + options);
    CAPTURE(options, r.err);
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::StartsWith("mha: error: ") && Catch::Contains("overflows float32"));
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    std::remove(input.c_str());
}

TEST_CASE("gradients beyond float32 from finite inputs are refused with their step, not saved",
          "[overflow][backward]") {
    // dO of 3e38 everywhere: dW_o = dOᵀ concat sums N·B products of ~1e38 and overflows first
    const std::string d_o = test::temp_path("huge-do.npy"), saved = test::temp_path("huge.npz");
    std::ofstream(d_o, std::ios::binary)
        << mha::npy::to_npy_bytes(mha::Tensor({2, 8, 256}, std::vector<float>(4096, 3e38f)));
    std::remove(saved.c_str());
    test::check_rejected(
        "--backward --grad-output " + d_o + " --save " + saved,
        "the gradients overflow float32 though the inputs and the output are finite: infinity "
        "first appears in the gradient dW_o (step b14, grad) at (0, 0); dO or the inputs are too "
        "large for float32 (scale them down)");
    std::ifstream written(saved);
    CHECK_FALSE(written.good());
    // a fully blocked row's NaN is PyTorch's answer too: saved, with the usual note
    const std::string dir = "data/grad/fully_masked/";
    const test::RunResult masked =
        test::run_mha(test::fixture_options(dir) + " --heads 2 --grad-output " + dir +
                      "grad_output.npy > /dev/null");
    CHECK(masked.status == 0);
}

}  // namespace test_overflow
