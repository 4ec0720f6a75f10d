// The MLA form's backward (core/backward/mla_backward): every gradient against central
// differences of the loss, the same bits at 1 and 3 threads, and every step on its plan.
// PyTorch's gradients are checked through the CLI in test_backward_torch.cpp.

#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "core/backward/mla_backward.h"
#include "core/forms/mla_pass.h"
#include "helpers.h"
#include "core/tensor/workspace.h"
#include "io/dry.h"
#include "io/init.h"
#include "recorder.h"

namespace test_mla_backward {

namespace {

using mha::Tensor;

constexpr float fd_step = 1e-2f;  // central differences of a float32 pass
// |numeric − analytic| relative to max(1, the gradient's largest magnitude): the step's
// truncation (h² f‴ / 6) and float32 rounding of L divided by 2h: at most 5e-4 measured here
constexpr double fd_tolerance = 2e-3;

// A pass: weights, x, masks, options.
struct MlaProblem {
    std::string name;
    mha::MlaWeights w;
    Tensor x;  // (B, N, d_model)
    mha::Masks masks;
    mha::ForwardOptions options;
};

// B sequences of N tokens through seeded MLA weights of these sizes, RoPE as DeepSeek-V2's.
MlaProblem problem(std::string name, std::size_t B, std::size_t N, std::size_t E, std::size_t h,
                   std::size_t d_c, std::size_t d_R) {
    MlaProblem p;
    p.name = std::move(name);
    p.w = mha::seeded_mla_weights(mha::seeded_mla_sizes(E, h, d_c, d_R), 11);
    p.x = mha::seeded_inputs(mha::Sizes{B, N, N, E, E, E, h, h, E / h}, true, 12).x_q;
    p.options.heads = h;
    p.options.rope = mha::Rope{mha::RopeLayout::Half, 10000.0};
    return p;
}

// The small passes the differences run on: plain, causal with key padding, a window with a
// soft-cap on the streaming path.
std::vector<MlaProblem> small_problems() {
    std::vector<MlaProblem> problems;
    problems.push_back(problem("plain", 2, 3, 8, 2, 4, 2));
    MlaProblem masked = problem("causal, key padding", 2, 4, 8, 2, 6, 2);
    masked.masks.causal = true;
    masked.masks.key_padding = Tensor({2, 4}, {0, 0, 0, -INFINITY, 0, 0, -INFINITY, 0});
    problems.push_back(std::move(masked));
    MlaProblem streamed = problem("window, softcap, streaming", 1, 5, 8, 2, 4, 4);
    streamed.masks.causal = true;
    streamed.masks.window = 2;
    streamed.masks.softcap = 0.5;
    streamed.options.path = mha::AttentionPath::Streaming;
    problems.push_back(std::move(streamed));
    return problems;
}

// dO (B, N, d_model), fixed values.
Tensor grad_output_of(const MlaProblem& p) {
    return mha::seeded_inputs(mha::Sizes{p.x.size(0), p.x.size(1), p.x.size(1), p.x.size(2),
                                         p.x.size(2), p.x.size(2), 1, 1, p.x.size(2)},
                              true, 13)
        .x_q;
}

mha::BackwardResult run(const MlaProblem& p, const Tensor& d_out, mha::Tracer& tracer) {
    return mha::forward_backward_mla(p.w, p.x, p.masks, p.options, d_out, tracer);
}
mha::BackwardResult run(const MlaProblem& p, const Tensor& d_out) {
    mha::NullTracer none;
    return run(p, d_out, none);
}

// L = Σ output ∘ dO, summed in double.
double loss(const MlaProblem& p, const Tensor& d_out) {
    const Tensor out = mha::mla_forward(p.w, p.x, p.masks, p.options, mha::MlaForm::Naive).output;
    double sum = 0.0;
    for (std::size_t e = 0; e < out.numel(); ++e) sum += double(out.data()[e]) * d_out.data()[e];
    return sum;
}

// (name, the tensor differentiated, its gradient) for x and every MLA weight.
std::vector<std::pair<std::string, std::pair<Tensor, Tensor>>> differentiated(
    MlaProblem& p, const mha::Gradients& g) {
    return {{"x", {p.x, g.input}},
            {"q_proj", {p.w.w_q, g.mla.w_q}},
            {"kv_a_proj_with_mqa", {p.w.w_kv_a, g.mla.w_kv_a}},
            {"kv_a_layernorm", {p.w.kv_norm, g.mla.kv_norm}},
            {"kv_b_proj", {p.w.w_kv_b, g.mla.w_kv_b}},
            {"o_proj", {p.w.w_o, g.mla.w_o}}};
}

double magnitude(const Tensor& t) {
    double largest = 1.0;
    for (const float v : t.to_vector()) largest = std::max(largest, double(std::fabs(v)));
    return largest;
}

}  // namespace

TEST_CASE("every MLA gradient agrees with central differences of the loss", "[backward][mla]") {
    for (MlaProblem& p : small_problems()) {
        CAPTURE(p.name);
        const Tensor d_out = grad_output_of(p);
        const mha::BackwardResult r = run(p, d_out);
        CHECK(r.grads.params.w_o.empty());  // MLA's gradients are in grads.mla
        for (auto& [name, pair] : differentiated(p, r.grads)) {
            CAPTURE(name);
            Tensor& tensor = pair.first;
            const Tensor& grad = pair.second;
            REQUIRE(grad.shape() == tensor.shape());
            const double scale = magnitude(grad);
            for (std::size_t e = 0; e < tensor.numel(); ++e) {
                CAPTURE(e);
                float& value = tensor.data()[e];  // shares storage with p's tensor
                const float kept = value;
                value = kept + fd_step;
                const double up = loss(p, d_out);
                value = kept - fd_step;
                const double down = loss(p, d_out);
                value = kept;
                const double numeric = (up - down) / (2.0 * double(fd_step));
                CHECK(std::fabs(numeric - grad.data()[e]) <= fd_tolerance * scale);
            }
        }
    }
}

TEST_CASE("the MLA backward gives the same bits at 1 and 3 threads", "[backward][mla]") {
    MlaProblem p = problem("threads", 2, 64, 64, 4, 32, 8);
    p.masks.causal = true;
    p.options.path = GENERATE(mha::AttentionPath::Standard, mha::AttentionPath::Streaming);
    const Tensor d_out = grad_output_of(p);
    p.options.threads = 1;
    mha::BackwardResult one = run(p, d_out);
    p.options.threads = 3;
    mha::BackwardResult three = run(p, d_out);
    const auto a = differentiated(p, one.grads), b = differentiated(p, three.grads);
    for (std::size_t i = 0; i < a.size(); ++i) {
        CAPTURE(a[i].first);
        CHECK(test::same_bits(a[i].second.second.to_vector(), b[i].second.second.to_vector()));
    }
}

TEST_CASE("every MLA backward step's tensor has the shape and strides its dry run shows",
          "[backward][mla]") {
    for (MlaProblem& p : small_problems()) {
        CAPTURE(p.name);
        test::Recorder rec, dry;
        run(p, grad_output_of(p), rec);
        MlaProblem d = p;  // the same problem without values, in a dry workspace
        d.w = mha::without_values(p.w);
        d.x = p.x.without_values();
        d.masks.attn_mask = p.masks.attn_mask.without_values();
        d.masks.key_padding = p.masks.key_padding.without_values();
        mha::Workspace workspace = mha::Workspace::dry();
        d.options.workspace = &workspace;
        run(d, grad_output_of(p).without_values(), dry);
        REQUIRE(rec.steps.size() == dry.steps.size());  // every step of the dry run was shown
        for (std::size_t i = 0; i < dry.steps.size(); ++i) {
            CAPTURE(i, dry.steps[i].tensor);
            CHECK(rec.steps[i].backward == dry.steps[i].backward);
            if (!dry.steps[i].backward) continue;
            REQUIRE(rec.seen[i]);
            CHECK(rec.seen[i]->shape == dry.steps[i].shape);
            CHECK(rec.seen[i]->strides == dry.steps[i].strides);
        }
        CHECK(rec.steps.back().tensor == "dx");
    }
}

}  // namespace test_mla_backward
