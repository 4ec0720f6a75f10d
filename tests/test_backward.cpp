// The backward pass (core/backward): a case worked by hand, central differences on every
// variant, the same bits at every thread count, GQA against its repeated heads, the fused form
// against the packed one, and every backward step checked against its plan.

#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/backward/backward.h"
#include "core/error.h"
#include "core/kv_heads.h"
#include "core/pass/shape_checks.h"
#include "core/tensor/workspace.h"
#include "helpers.h"
#include "io/dry.h"
#include "kernel_variants.h"
#include "recorder.h"
#include "show/notes.h"

namespace test_backward {

namespace {

using mha::Tensor;

constexpr double hand_tolerance = 1e-6;  // float32 rounding of numbers near 1
constexpr double fd_step = 1e-2;         // central differences in float32: loose
constexpr double fd_tolerance = 2e-2;    // relative to max(1, the gradient's largest magnitude)
constexpr double form_tolerance = 1e-5;  // one gradient summed in another order
// streaming against standard, relative to max(1, the gradient's largest magnitude): P
// recomputed from lse (e^x to 1e-7) and every sum in another order, a few float32 ulps
constexpr double stream_tolerance = 1e-5;

// U(-scale, scale) values of a shape, from a seed (any portable mapping will do in a test).
Tensor random_tensor(mha::Shape shape, std::uint32_t seed, float scale = 0.5f) {
    std::mt19937 bits(seed);
    std::vector<float> values(mha::element_count(shape));
    for (float& v : values) v = scale * (float(bits() % 20001) / 10000.0f - 1.0f);
    return Tensor(std::move(shape), std::move(values));
}

// A problem: weights, inputs, masks, options, form.
struct Problem {
    std::string name;
    mha::Weights w;
    mha::Inputs in;
    mha::Masks masks;
    mha::ForwardOptions options;
    mha::Form form = mha::Form::Packed;
};

// Weights for h heads of d_k, G key/value heads, key/value inputs kdim, vdim wide.
mha::Weights weights_of(std::size_t E, std::size_t h, std::size_t d_k, std::size_t G,
                        std::size_t kdim, std::size_t vdim, bool bias, std::uint32_t seed) {
    mha::Weights w;
    w.w_q = random_tensor({h * d_k, E}, seed + 1);
    w.w_k = random_tensor({G * d_k, kdim}, seed + 2);
    w.w_v = random_tensor({G * d_k, vdim}, seed + 3);
    w.w_o = random_tensor({E, h * d_k}, seed + 4);
    if (bias) {
        w.b_q = random_tensor({h * d_k}, seed + 5);
        w.b_k = random_tensor({G * d_k}, seed + 6);
        w.b_v = random_tensor({G * d_k}, seed + 7);
        w.b_o = random_tensor({E}, seed + 8);
    }
    return w;
}

// Self-attention over x (B, N, E).
Problem self_problem(std::string name, std::size_t B, std::size_t N, std::size_t E, std::size_t h,
                     std::size_t G = 0, bool bias = true) {
    Problem p;
    p.name = std::move(name);
    G = G == 0 ? h : G;
    p.w = weights_of(E, h, E / h, G, E, E, bias, 10);
    const Tensor x = random_tensor({B, N, E}, 20, 1.0f);
    p.in = {x, x, x};
    p.options.heads = h;
    return p;
}

// Cross-attention: x_q (B, N, E), x_k (B, M, kdim), x_v (B, M, vdim).
Problem cross_problem(std::string name, std::size_t B, std::size_t N, std::size_t M, std::size_t E,
                      std::size_t h, std::size_t kdim, std::size_t vdim) {
    Problem p;
    p.name = std::move(name);
    p.w = weights_of(E, h, E / h, h, kdim, vdim, true, 30);
    p.in = {random_tensor({B, N, E}, 40, 1.0f), random_tensor({B, M, kdim}, 41, 1.0f),
            random_tensor({B, M, vdim}, 42, 1.0f)};
    p.options.heads = h;
    return p;
}

// RoPE, QK-norm (heads of d_k), a soft-cap (0: none) and the causal mask, as recent models
// combine them.
Problem modern(Problem p, std::size_t d_k, double softcap) {
    p.w.q_norm = random_tensor({d_k}, 62, 1.0f);
    p.w.k_norm = random_tensor({d_k}, 63, 1.0f);
    p.options.rope = mha::Rope{};
    p.masks.softcap = softcap;
    p.masks.causal = true;
    return p;
}

// Every variant the backward differentiates, small.
std::vector<Problem> variants() {
    std::vector<Problem> list;
    list.push_back(self_problem("plain", 2, 3, 8, 2));
    list.push_back(self_problem("no bias", 1, 3, 8, 2, 0, false));
    list.push_back(cross_problem("cross kdim vdim", 2, 3, 4, 8, 2, 6, 5));
    list.push_back(self_problem("GQA", 1, 4, 8, 4, 2));
    list.push_back(self_problem("MQA", 1, 4, 8, 4, 1));
    {
        Problem p = self_problem("causal", 1, 4, 8, 2);
        p.masks.causal = true;
        list.push_back(p);
    }
    {
        Problem p = cross_problem("causal top-left", 1, 3, 5, 8, 2, 8, 8);
        p.masks.causal = true;
        p.masks.causal_align = mha::CausalAlign::TopLeft;
        list.push_back(p);
    }
    {
        Problem p = cross_problem("causal bottom-right", 1, 3, 5, 8, 2, 8, 8);
        p.masks.causal = true;
        list.push_back(p);
    }
    {
        Problem p = self_problem("key padding", 2, 4, 8, 2);
        p.masks.key_padding = Tensor({2, 4}, {0, 0, 0, -INFINITY, 0, 0, -INFINITY, -INFINITY});
        list.push_back(p);
    }
    {
        Problem p = self_problem("float mask", 1, 3, 8, 2);
        p.masks.attn_mask = random_tensor({3, 3}, 50, 1.0f);
        list.push_back(p);
    }
    for (const mha::RopeLayout layout : {mha::RopeLayout::Half, mha::RopeLayout::Interleaved}) {
        Problem p = self_problem(layout == mha::RopeLayout::Half ? "rope half" : "rope interleaved",
                                 1, 4, 8, 2);
        p.options.rope = mha::Rope{layout, 10000.0};
        list.push_back(p);
    }
    {
        Problem p = self_problem("alibi", 1, 4, 8, 2);
        p.masks.alibi = true;
        p.masks.causal = true;
        list.push_back(p);
    }
    {
        Problem p = self_problem("window sinks", 1, 5, 8, 2);
        p.masks.window = 2;
        p.masks.sinks = 1;
        list.push_back(p);
    }
    {
        Problem p = self_problem("softcap", 1, 4, 8, 2);
        p.masks.softcap = 0.3;  // small, so that tanh bends: 1 - tanh² is far from 1
        list.push_back(p);
    }
    {
        Problem p = self_problem("qk-norm", 1, 4, 8, 2, 2);
        p.w.q_norm = random_tensor({4}, 60, 1.0f);
        p.w.k_norm = random_tensor({4}, 61, 1.0f);
        list.push_back(p);
    }
    list.push_back(modern(self_problem("modern GQA", 1, 4, 16, 4, 2), 4, 2.0));
    {
        Problem p = self_problem("bias_kv zero_attn", 2, 3, 8, 2);
        p.w.bias_k = random_tensor({8}, 70);
        p.w.bias_v = random_tensor({8}, 71);
        p.options.add_zero_attn = true;
        list.push_back(p);
    }
    {
        Problem p = cross_problem("zero_attn cross", 1, 2, 3, 8, 2, 8, 8);
        p.options.add_zero_attn = true;
        list.push_back(p);
    }
    {
        Problem p = self_problem("scale base", 1, 3, 8, 2);
        p.options.scale_base = 7.0;
        list.push_back(p);
    }
    {
        Problem p = self_problem("no scale", 1, 3, 8, 2);
        p.options.scale = false;
        list.push_back(p);
    }
    {
        Problem p = self_problem("wider heads", 1, 3, 8, 2);
        p.w = weights_of(8, 2, 6, 2, 8, 8, true, 80);
        list.push_back(p);
    }
    {
        Problem p = self_problem("ablated head", 1, 3, 8, 2);
        p.options.ablate_head = 1;
        list.push_back(p);
    }
    {
        Problem p = self_problem("zeroed blocked row", 1, 3, 8, 2);
        p.masks.attn_mask = Tensor({3, 3}, {0, 0, 0, -INFINITY, -INFINITY, -INFINITY, 0, 0, 0});
        p.options.zero_masked_rows = true;
        list.push_back(p);
    }
    {
        Problem p = self_problem("fused", 2, 3, 8, 2);
        p.form = mha::Form::FusedQkv;
        list.push_back(p);
    }
    {
        Problem p = modern(self_problem("fused rope qk-norm", 1, 4, 8, 2), 4, 0.0);
        p.form = mha::Form::FusedQkv;
        list.push_back(p);
    }
    {
        Problem p = modern(self_problem("per-head GQA", 2, 4, 16, 4, 2), 4, 2.0);
        p.form = mha::Form::PerHead;
        list.push_back(p);
    }
    {
        Problem p = cross_problem("per-head cross", 1, 3, 4, 8, 2, 6, 5);
        p.form = mha::Form::PerHead;
        list.push_back(p);
    }
    return list;
}

mha::BackwardResult run(const Problem& p, const Tensor& d_out, mha::Tracer& tracer) {
    return mha::forward_backward(p.w, p.in, p.masks, p.options, p.form, d_out, tracer);
}

mha::BackwardResult run(const Problem& p, const Tensor& d_out) {
    mha::NullTracer none;
    return run(p, d_out, none);
}

// dOut for a problem: (B, N, d_model).
Tensor grad_output_of(const Problem& p, std::uint32_t seed = 99) {
    return random_tensor({p.in.x_q.size(0), p.in.x_q.size(1), p.w.d_model()}, seed, 1.0f);
}

// L = Σ output ∘ dOut, in double.
double loss(const Problem& p, const Tensor& d_out) {
    mha::NullTracer none;
    const mha::ForwardResult r = mha::forward(p.w, p.in, p.masks, p.options, none);
    double sum = 0.0;
    for (std::size_t e = 0; e < r.output.numel(); ++e)
        sum += double(r.output.data()[e]) * d_out.data()[e];
    return sum;
}

// Every tensor with a gradient: its name, the tensor to perturb, its gradient.
std::vector<std::tuple<std::string, Tensor, Tensor>> differentiated(const Problem& p,
                                                                    const mha::Gradients& g) {
    std::vector<std::tuple<std::string, Tensor, Tensor>> list = {
        {"input", p.in.x_q, g.input},
        {"w_q", p.w.w_q, g.params.w_q},
        {"w_k", p.w.w_k, g.params.w_k},
        {"w_v", p.w.w_v, g.params.w_v},
        {"w_o", p.w.w_o, g.params.w_o},
        {"b_q", p.w.b_q, g.params.b_q},
        {"b_k", p.w.b_k, g.params.b_k},
        {"b_v", p.w.b_v, g.params.b_v},
        {"b_o", p.w.b_o, g.params.b_o},
        {"q_norm", p.w.q_norm, g.params.q_norm},
        {"k_norm", p.w.k_norm, g.params.k_norm},
        {"bias_k", p.w.bias_k, g.params.bias_k},
        {"bias_v", p.w.bias_v, g.params.bias_v}};
    if (!p.in.self_attention()) {
        list.emplace_back("key", p.in.x_k, g.key);
        list.emplace_back("value", p.in.x_v, g.value);
    }
    return list;
}

// The largest magnitude of a tensor's elements (at least 1).
double magnitude(const Tensor& t) {
    double worst = 1.0;
    for (const float v : t.to_vector()) worst = std::max(worst, double(std::fabs(v)));
    return worst;
}

}  // namespace

TEST_CASE("the backward of a tiny causal pass matches the gradients worked by hand", "[backward]") {
    // B = 1, N = M = 2, d_model = d_k = 1, h = 1, every weight 1, no bias, not scaled, causal.
    // x = [0, 1], so Q = K = V = x, scores = x xᵀ = [[0, 0], [0, 1]], and with the causal mask
    // P = [[1, 0], [1 − p, p]], p = e / (1 + e) = 0.7310586. output = O = P V = [0, p].
    // dOut = [1, 1]:
    //   dW_o = Σ dOut · concat = 0 + p = p          dconcat = dO = dOut · 1 = [1, 1]
    //   dV = Pᵀ dO = [1 + (1 − p), 0 + p] = [2 − p, p]
    //   dP = dO Vᵀ = [[0, 1], [0, 1]]               D = rowsum(dO ∘ O) = [0, p]
    //   dS = P ∘ (dP − D) = [[1·0, 0·1], [(1 − p)(0 − p), p(1 − p)]] = [[0, 0], [−q, q]],
    //       q = p(1 − p) = 0.1966119; not scaled: dscores = dS
    //   dQ = dscores K = [0, −q·0 + q·1] = [0, q]   dK = dscoresᵀ Q = [−q, q]
    //   dW_q = Σ dQ x = q,  dW_k = Σ dK x = q,  dW_v = Σ dV x = p
    //   dx = dQ + dK + dV = [0 − q + 2 − p, q + q + p] = [2 − p − q, 2q + p]
    const Tensor x({1, 2, 1}, {0.0f, 1.0f});
    mha::Weights w;
    w.w_q = w.w_k = w.w_v = w.w_o = Tensor({1, 1}, {1.0f});
    Problem p{"hand", w, {x, x, x}, {}, {}, mha::Form::Packed};
    p.masks.causal = true;
    p.options.scale = false;
    const mha::BackwardResult r = run(p, Tensor({1, 2, 1}, {1.0f, 1.0f}));
    const double e = std::exp(1.0), pr = e / (1 + e), q = pr * (1 - pr);
    CHECK(r.forward.output.to_vector()[1] == Approx(pr).margin(hand_tolerance));
    CHECK(r.grads.params.w_o.to_vector()[0] == Approx(pr).margin(hand_tolerance));
    CHECK(r.grads.params.w_q.to_vector()[0] == Approx(q).margin(hand_tolerance));
    CHECK(r.grads.params.w_k.to_vector()[0] == Approx(q).margin(hand_tolerance));
    CHECK(r.grads.params.w_v.to_vector()[0] == Approx(pr).margin(hand_tolerance));
    CHECK(r.grads.params.b_q.empty());
    const std::vector<float> dx = r.grads.input.to_vector();
    CHECK(dx[0] == Approx(2 - pr - q).margin(hand_tolerance));
    CHECK(dx[1] == Approx(2 * q + pr).margin(hand_tolerance));
    CHECK(r.grads.key.empty());
    CHECK(r.grads.value.empty());
}

TEST_CASE("every gradient of every variant agrees with central differences", "[backward]") {
    for (Problem& p : variants()) {
        CAPTURE(p.name);
        const Tensor d_out = grad_output_of(p);
        const mha::BackwardResult r = run(p, d_out);
        for (auto& [name, tensor, grad] : differentiated(p, r.grads)) {
            CAPTURE(name);
            REQUIRE(tensor.empty() == grad.empty());
            if (tensor.empty()) continue;
            REQUIRE(grad.shape() == tensor.shape());
            const double scale = magnitude(grad);
            const std::size_t n = tensor.numel();
            for (const std::size_t e : {std::size_t(0), n / 3, (2 * n) / 3, n - 1}) {
                CAPTURE(e);
                float& value = tensor.data()[e];
                const float kept = value;
                value = float(kept + fd_step);
                const double up = loss(p, d_out);
                value = float(kept - fd_step);
                const double down = loss(p, d_out);
                value = kept;
                const double numeric = (up - down) / (2 * fd_step);
                CHECK(std::fabs(numeric - grad.data()[e]) <= fd_tolerance * scale);
            }
        }
    }
}

TEST_CASE("a fully blocked row gives NaN gradients, as PyTorch's do", "[backward]") {
    Problem p = self_problem("blocked row", 1, 3, 8, 2);
    p.masks.attn_mask = Tensor({3, 3}, {0, 0, 0, -INFINITY, -INFINITY, -INFINITY, 0, 0, 0});
    const mha::BackwardResult r = run(p, grad_output_of(p));
    CHECK(r.forward.fully_masked_rows == 2);
    CHECK(std::isnan(r.grads.params.w_o.to_vector()[0]));
    CHECK(std::isnan(r.grads.input.to_vector()[0]));
}

TEST_CASE("the backward gives the same bits at 1, 2, 3 and 7 threads", "[backward]") {
    Problem p = modern(self_problem("threads", 2, 128, 128, 8, 2), 16, 5.0);
    p.options.path = GENERATE(mha::AttentionPath::Standard, mha::AttentionPath::Streaming);
    const Tensor d_out = grad_output_of(p);
    p.options.threads = 1;
    const mha::BackwardResult one = run(p, d_out);
    for (const std::size_t threads : {2, 3, 7}) {
        CAPTURE(threads);
        p.options.threads = threads;
        const mha::BackwardResult many = run(p, d_out);
        const auto expected = differentiated(p, one.grads), got = differentiated(p, many.grads);
        for (std::size_t i = 0; i < expected.size(); ++i) {
            CAPTURE(std::get<0>(expected[i]));
            CHECK(test::same_bits(std::get<2>(expected[i]).to_vector(),
                                  std::get<2>(got[i]).to_vector()));
        }
    }
}

TEST_CASE("the backward gives the same bits traced and untraced", "[backward]") {
    // untraced, the standard path runs each unit's b10-b6 at once and folds b7's scale into b9
    // (without a soft-cap); traced, it runs step by step and shows each tensor
    for (const Problem& p : variants()) {
        CAPTURE(p.name);
        const Tensor d_out = grad_output_of(p);
        const mha::BackwardResult untraced = run(p, d_out);
        test::Recorder rec;
        const mha::BackwardResult traced = run(p, d_out, rec);
        const auto expected = differentiated(p, traced.grads);
        const auto got = differentiated(p, untraced.grads);
        for (std::size_t i = 0; i < expected.size(); ++i) {
            CAPTURE(std::get<0>(expected[i]));
            CHECK(test::same_bits(std::get<2>(expected[i]).to_vector(),
                                  std::get<2>(got[i]).to_vector()));
        }
    }
}

TEST_CASE("GQA's dK and dV are the sums of the repeated heads' gradients", "[backward]") {
    const std::size_t h = 4, G = 2, d_k = 4;
    const Problem gqa = self_problem("GQA", 2, 5, 16, h, G);
    Problem repeated = gqa;  // W_k, W_v, b_k, b_v with each K/V head's rows repeated per query head
    const auto repeat = [&](const Tensor& t) {
        const std::size_t row = t.numel() / t.size(0);
        mha::Shape shape = t.shape();
        shape[0] = h * d_k;
        std::vector<float> values;
        for (std::size_t i = 0; i < h; ++i) {
            const float* from = t.data() + mha::kv_head_of(i, h, G) * d_k * row;
            values.insert(values.end(), from, from + d_k * row);
        }
        return Tensor(shape, values);
    };
    repeated.w.w_k = repeat(gqa.w.w_k);
    repeated.w.w_v = repeat(gqa.w.w_v);
    repeated.w.b_k = repeat(gqa.w.b_k);
    repeated.w.b_v = repeat(gqa.w.b_v);
    const Tensor d_out = grad_output_of(gqa);
    const mha::BackwardResult a = run(gqa, d_out), b = run(repeated, d_out);
    test::require_close(a.forward.output, b.forward.output, form_tolerance);
    test::require_close(a.grads.input, b.grads.input, form_tolerance);
    test::require_close(a.grads.params.w_q, b.grads.params.w_q, form_tolerance);
    const auto summed = [&](const Tensor& t) {  // the repeated heads' rows added per K/V head
        const std::size_t row = t.numel() / t.size(0);
        mha::Shape shape = t.shape();
        shape[0] = G * d_k;
        std::vector<float> values(G * d_k * row, 0.0f);
        for (std::size_t i = 0; i < h; ++i) {
            const std::size_t g = mha::kv_head_of(i, h, G);
            for (std::size_t e = 0; e < d_k * row; ++e)
                values[g * d_k * row + e] += t.data()[i * d_k * row + e];
        }
        return Tensor(shape, values);
    };
    test::require_close(a.grads.params.w_k, summed(b.grads.params.w_k), form_tolerance);
    test::require_close(a.grads.params.w_v, summed(b.grads.params.w_v), form_tolerance);
    test::require_close(a.grads.params.b_k, summed(b.grads.params.b_k), form_tolerance);
    test::require_close(a.grads.params.b_v, summed(b.grads.params.b_v), form_tolerance);
}

TEST_CASE("the fused QKV and per-head forms give the packed form's gradients", "[backward]") {
    const mha::Form form = GENERATE(mha::Form::FusedQkv, mha::Form::PerHead);
    Problem packed = modern(self_problem("packed", 2, 4, 8, 2), 4, 2.0);
    Problem other_form = packed;
    other_form.form = form;
    const Tensor d_out = grad_output_of(packed);
    const mha::BackwardResult a = run(packed, d_out), b = run(other_form, d_out);
    const auto one = differentiated(packed, a.grads), other = differentiated(other_form, b.grads);
    for (std::size_t i = 0; i < one.size(); ++i) {
        CAPTURE(std::get<0>(one[i]));
        REQUIRE(std::get<2>(one[i]).empty() == std::get<2>(other[i]).empty());
        if (!std::get<2>(one[i]).empty())
            test::require_close(std::get<2>(other[i]), std::get<2>(one[i]), form_tolerance);
    }
}

TEST_CASE("every backward step's tensor has the shape and strides its dry run shows",
          "[backward]") {
    const mha::AttentionPath path =
        GENERATE(mha::AttentionPath::Standard, mha::AttentionPath::Streaming);
    for (Problem p : variants()) {
        p.options.path = path;
        CAPTURE(p.name, path == mha::AttentionPath::Streaming);
        test::Recorder rec, dry;
        run(p, grad_output_of(p), rec);
        Problem d = p;  // the same problem without values, in a dry workspace
        d.w = mha::without_values(p.w);
        d.in = mha::without_values(p.in);
        d.masks.attn_mask = p.masks.attn_mask.without_values();
        d.masks.key_padding = p.masks.key_padding.without_values();
        mha::Workspace workspace = mha::Workspace::dry();
        d.options.workspace = &workspace;
        run(d, grad_output_of(p).without_values(), dry);
        REQUIRE(rec.steps.size() == dry.steps.size());  // every step of the dry run was shown
        std::size_t backward = 0;
        for (std::size_t i = 0; i < dry.steps.size(); ++i) {
            CAPTURE(i, dry.steps[i].tensor);
            CHECK(rec.steps[i].backward == dry.steps[i].backward);
            REQUIRE(rec.seen[i]);
            CHECK(rec.seen[i]->shape == dry.steps[i].shape);
            CHECK(rec.seen[i]->strides == dry.steps[i].strides);
            backward += dry.steps[i].backward ? 1 : 0;
        }
        CHECK(backward > 10);
        CHECK(rec.steps.back().backward);
    }
}

TEST_CASE("the streaming backward gives the standard backward's gradients", "[backward]") {
    EACH_VARIANT();
    std::vector<Problem> problems = variants();
    {  // several tiles of keys and queries, the causal band and a window skipping some
        Problem p = self_problem("long causal window", 1, 300, 16, 2, 1);
        p.masks.causal = true;
        p.masks.window = 70;
        p.masks.sinks = 2;
        problems.push_back(p);
        Problem q = cross_problem("long cross padded", 2, 70, 300, 8, 2, 6, 5);
        std::vector<float> padding(2 * 300, 0.0f);
        for (std::size_t j = 3; j < padding.size(); j += 5) padding[j] = -INFINITY;
        q.masks.key_padding = Tensor({2, 300}, padding);
        problems.push_back(q);
    }
    for (const Problem& standard : problems) {
        CAPTURE(standard.name);
        Problem streamed = standard;
        streamed.options.path = mha::AttentionPath::Streaming;
        const Tensor d_out = grad_output_of(standard);
        const mha::BackwardResult a = run(standard, d_out), b = run(streamed, d_out);
        const auto want = differentiated(standard, a.grads),
                   got = differentiated(streamed, b.grads);
        for (std::size_t i = 0; i < want.size(); ++i) {
            CAPTURE(std::get<0>(want[i]));
            const Tensor& expected = std::get<2>(want[i]);
            REQUIRE(std::get<2>(got[i]).empty() == expected.empty());
            if (expected.empty()) continue;
            test::require_close(std::get<2>(got[i]), expected,
                                stream_tolerance * magnitude(expected));
        }
    }
}

TEST_CASE("the streamed --flash-row retraces dQ's row beside the standard row", "[backward]") {
    Problem p = self_problem("flash row", 1, 300, 16, 2);
    p.masks.causal = true;
    p.options.path = mha::AttentionPath::Streaming;
    p.options.flash_row = 299;
    test::Recorder rec;
    const mha::BackwardResult r = run(p, grad_output_of(p), rec);
    const mha::Step* dq = nullptr;
    for (const mha::Step& step : rec.steps) {
        if (step.facts.flash_back) dq = &step;
    }
    REQUIRE(dq);
    CHECK(dq->kind == mha::StepKind::AttendGrad);
    const mha::FlashBackFacts& f = *dq->facts.flash_back;
    CHECK(f.tiles.size() == 2);  // keys 0..255, 256..299
    CHECK(f.max_difference < 1e-5);
    CHECK(f.d == Approx(f.d_standard).margin(1e-5));
    REQUIRE(f.dq.size() == 8);
    CHECK(f.dq.front() != 0.0f);
    CHECK(r.forward.weights.empty());  // the streaming forward kept lse (B, h, N), never P
    std::string notes;
    for (const std::string& line : mha::step_notes(*dq)) notes += line + "\n";
    CHECK_THAT(notes, Catch::Contains("flash row: query 299 of batch 0, head 0, keys in tiles "
                                      "of 256; the forward kept only lse = "));
    CHECK_THAT(notes, Catch::Contains("P = e^(s - lse)"));
    CHECK_THAT(notes, Catch::Contains("tile 1, keys 256..299: Σ P = "));
    CHECK_THAT(notes, Catch::Contains("the standard backward's row (P stored whole)"));
}

TEST_CASE("the D trick's difference is measured and small", "[backward]") {
    test::Recorder rec;
    const Problem p = self_problem("plain", 2, 5, 8, 2);
    run(p, grad_output_of(p), rec);
    bool found = false;
    for (const mha::Step& step : rec.steps) {
        if (step.kind != mha::StepKind::RowDot) continue;
        found = true;
        REQUIRE(step.facts.row_dot_difference);
        CHECK(*step.facts.row_dot_difference < 1e-5);
    }
    CHECK(found);
}

TEST_CASE("the backward refuses what it cannot differentiate yet", "[backward]") {
    Problem p = self_problem("plain", 1, 3, 8, 2);
    const Tensor d_out = grad_output_of(p);
    mha::NullTracer none;
    const auto refused = [&](const Problem& q, const Tensor& d, const std::string& message) {
        REQUIRE_THROWS_WITH(run(q, d), Catch::Contains(message));
    };
    Problem mla = p;
    mla.form = mha::Form::Mla;
    refused(mla, d_out, "MLA form");
    Problem appended = p;
    appended.form = mha::Form::PerHead;
    appended.options.add_zero_attn = true;
    refused(appended, d_out, "per-head form does not take appended key/value positions");
    Problem decode = p;
    decode.form = mha::Form::Decode;
    refused(decode, d_out, "decode form");
    refused(p, Tensor({1, 3, 4}), "expected the output's shape (B, N, d_model) = (1, 3, 8)");
}

}  // namespace test_backward
