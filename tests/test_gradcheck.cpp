// The double-precision reference backward against float64 torch.autograd
// (tests/data/grad_reference, make_grad_reference_fixtures.py) and the float backward against
// it, the two softmax backward forms, --gradcheck's table and exit status, and its refusals.

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <tuple>

#include "app/run/gradcheck.h"
#include "core/backward/backward.h"
#include "core/reference.h"
#include "core/pass/attention.h"
#include "core/pass/score_rules.h"
#include "core/pass/shape_checks.h"
#include "helpers.h"
#include "io/npy.h"

namespace test_gradcheck {

namespace {

using Arrays = std::map<std::string, mha::npy::Array>;

constexpr double autograd_tolerance = 1e-10;      // the reference against float64 autograd
constexpr double forms_tolerance = 1e-12;         // the two softmax backward forms
constexpr double float_forward_tolerance = 1e-5;  // the reference's output against forward()
// forward_backward's float32 gradients against the reference, relative to each gradient's
// largest magnitude or 1, whichever is larger: the fixtures' gradients are O(1), and b_k's is
// zero in exact arithmetic (it shifts a whole row of scores), float32 rounding in the float
// pass (issue 28 asks 1e-4 of float32 against autograd)
constexpr double float_backward_tolerance = 1e-5;

// A case of make_grad_reference_fixtures.py with the options its CASES entry gives.
struct FixtureCase {
    std::string name;
    mha::ForwardOptions options;
    mha::Masks masks;  // the rules; the tensors come from the file
};

std::vector<FixtureCase> fixture_cases() {
    std::vector<FixtureCase> cases(5);
    cases[0].name = "masked";
    cases[0].options.heads = 2;
    cases[1].name = "cross_bias_kv";
    cases[1].options.heads = 2;
    cases[1].options.add_zero_attn = true;
    cases[2].name = "gqa_rope_causal";
    cases[2].options.heads = 4;
    cases[2].options.rope = mha::Rope{mha::RopeLayout::Half, 10000.0};
    cases[2].masks.causal = true;
    cases[3].name = "modern";
    cases[3].options.heads = 4;
    cases[3].options.rope = mha::Rope{mha::RopeLayout::Interleaved, 100.0};
    cases[3].options.scale_base = 3.0;
    cases[3].masks.alibi = true;
    cases[3].masks.window = 3;
    cases[3].masks.sinks = 1;
    cases[3].masks.softcap = 2.0;
    cases[4].name = "top_left_zero_rows";
    cases[4].options.heads = 2;
    cases[4].options.scale = false;
    cases[4].options.zero_masked_rows = true;
    cases[4].options.ablate_head = 1;
    cases[4].masks.causal = true;
    cases[4].masks.causal_align = mha::CausalAlign::TopLeft;
    return cases;
}

mha::Tensor tensor_or_empty(const Arrays& a, const std::string& name) {
    const auto found = a.find(name);
    return found == a.end() ? mha::Tensor() : mha::npy::to_tensor(found->second);
}

// The float problem of a fixture file: weights, inputs, the masks' tensors.
struct FixtureProblem {
    Arrays arrays;
    mha::Weights weights;
    mha::Inputs inputs;
    mha::Masks masks;
    mha::ForwardOptions options;
};

FixtureProblem load_case(const FixtureCase& c) {
    FixtureProblem p;
    p.arrays = mha::npy::read_npz("data/grad_reference/" + c.name + ".npz");
    const Arrays& a = p.arrays;
    using W = mha::Weights;
    const std::vector<std::pair<mha::Tensor W::*, const char*>> fields = {
        {&W::w_q, "w_q"},       {&W::w_k, "w_k"},       {&W::w_v, "w_v"},
        {&W::w_o, "w_o"},       {&W::b_q, "b_q"},       {&W::b_k, "b_k"},
        {&W::b_v, "b_v"},       {&W::b_o, "b_o"},       {&W::q_norm, "q_norm"},
        {&W::k_norm, "k_norm"}, {&W::bias_k, "bias_k"}, {&W::bias_v, "bias_v"}};
    for (const auto& [field, name] : fields) p.weights.*field = tensor_or_empty(a, name);
    const mha::Tensor x = tensor_or_empty(a, "x_q");
    p.inputs = a.count("x_k") ? mha::Inputs{x, tensor_or_empty(a, "x_k"), tensor_or_empty(a, "x_v")}
                              : mha::Inputs{x, x, x};
    p.masks = c.masks;
    p.masks.attn_mask = tensor_or_empty(a, "attn_mask");
    p.masks.key_padding = tensor_or_empty(a, "key_padding");
    p.options = c.options;
    return p;
}

mha::GradcheckProblem double_problem(const FixtureProblem& p) {
    mha::GradcheckProblem d{mha::to_double(p.weights),
                            mha::to_double(p.inputs),
                            p.masks,
                            p.options,
                            mha::check_pass(p.weights, p.inputs, p.masks, p.options),
                            {}};
    const mha::npy::Array& d_out = p.arrays.at("grad_output");
    d.grad_output = {d_out.shape, d_out.values};
    return d;
}

mha::ReferenceGradResult reference_of(const mha::GradcheckProblem& d) {
    return mha::reference_forward_backward(d.weights, d.inputs, d.masks, d.options, d.sizes,
                                           d.grad_output);
}

// The largest |actual − expected|; the test fails on a shape mismatch.
double max_abs_difference(const mha::DoubleTensor& actual, const mha::npy::Array& expected) {
    REQUIRE(actual.shape == expected.shape);
    double worst = 0.0;
    for (std::size_t i = 0; i < actual.values.size(); ++i)
        worst = std::max(worst, std::fabs(actual.values[i] - expected.values[i]));
    return worst;
}

std::vector<double> random_row(std::mt19937& engine, std::size_t m) {
    std::normal_distribution<double> normal;
    std::vector<double> row(m);
    for (double& x : row) x = normal(engine);
    return row;
}

// softmax of s, with p = 0 where blocked[j]
std::vector<double> softmax_of(const std::vector<double>& s, const std::vector<bool>& blocked) {
    std::vector<double> p(s.size(), 0.0);
    double sum = 0.0;
    for (std::size_t j = 0; j < s.size(); ++j) {
        if (!blocked[j]) sum += p[j] = std::exp(s[j]);
    }
    for (double& x : p) x /= sum;
    return p;
}

}  // namespace

TEST_CASE("the double reference backward equals float64 torch.autograd", "[backward]") {
    for (const FixtureCase& c : fixture_cases()) {
        SECTION(c.name) {
            const FixtureProblem p = load_case(c);
            const mha::ReferenceGradResult r = reference_of(double_problem(p));
            CHECK(max_abs_difference(r.output, p.arrays.at("output")) <= autograd_tolerance);
            const std::vector<std::pair<std::string, const mha::DoubleTensor*>> grads = {
                {"x_q", &r.grads.input},
                {"x_k", &r.grads.key},
                {"x_v", &r.grads.value},
                {"w_q", &r.grads.params.w_q},
                {"w_k", &r.grads.params.w_k},
                {"w_v", &r.grads.params.w_v},
                {"w_o", &r.grads.params.w_o},
                {"b_q", &r.grads.params.b_q},
                {"b_k", &r.grads.params.b_k},
                {"b_v", &r.grads.params.b_v},
                {"b_o", &r.grads.params.b_o},
                {"q_norm", &r.grads.params.q_norm},
                {"k_norm", &r.grads.params.k_norm},
                {"bias_k", &r.grads.params.bias_k},
                {"bias_v", &r.grads.params.bias_v}};
            for (const auto& [name, grad] : grads) {
                CAPTURE(name);
                const auto expected = p.arrays.find("grad." + name);
                REQUIRE(grad->absent() == (expected == p.arrays.end()));
                if (!grad->absent())
                    CHECK(max_abs_difference(*grad, expected->second) <= autograd_tolerance);
            }
        }
    }
}

TEST_CASE("the double reference computes what the float forward computes", "[backward]") {
    for (const FixtureCase& c : fixture_cases()) {
        SECTION(c.name) {
            const FixtureProblem p = load_case(c);
            const mha::GradcheckProblem d = double_problem(p);
            mha::NullTracer none;
            const mha::ForwardResult f =
                mha::forward(p.weights, p.inputs, p.masks, p.options, none);
            const mha::DoubleTensor r =
                mha::reference_output(d.weights, d.inputs, d.masks, d.options, d.sizes);
            const std::vector<float> out = f.output.to_vector();
            REQUIRE(out.size() == r.values.size());
            for (std::size_t i = 0; i < out.size(); ++i)
                REQUIRE(std::fabs(out[i] - r.values[i]) <= float_forward_tolerance);
        }
    }
}

TEST_CASE("the float backward (forward_backward) equals the double reference", "[backward]") {
    for (const FixtureCase& c : fixture_cases()) {
        SECTION(c.name) {
            const FixtureProblem p = load_case(c);
            const mha::Tensor d_out = mha::npy::to_tensor(p.arrays.at("grad_output"));
            mha::GradcheckProblem d = double_problem(p);
            d.grad_output = mha::to_double(d_out);  // both from the same float32 dO
            const mha::ReferenceGradResult r = reference_of(d);
            mha::NullTracer none;
            const mha::BackwardResult f = mha::forward_backward(
                p.weights, p.inputs, p.masks, p.options, mha::Form::Packed, d_out, none);
            const mha::Gradients& g = f.grads;
            const mha::DoubleGradients& e = r.grads;
            const std::vector<std::tuple<std::string, const mha::Tensor*, const mha::DoubleTensor*>>
                pairs = {{"input", &g.input, &e.input},
                         {"key", &g.key, &e.key},
                         {"value", &g.value, &e.value},
                         {"w_q", &g.params.w_q, &e.params.w_q},
                         {"w_k", &g.params.w_k, &e.params.w_k},
                         {"w_v", &g.params.w_v, &e.params.w_v},
                         {"w_o", &g.params.w_o, &e.params.w_o},
                         {"b_q", &g.params.b_q, &e.params.b_q},
                         {"b_k", &g.params.b_k, &e.params.b_k},
                         {"b_v", &g.params.b_v, &e.params.b_v},
                         {"b_o", &g.params.b_o, &e.params.b_o},
                         {"q_norm", &g.params.q_norm, &e.params.q_norm},
                         {"k_norm", &g.params.k_norm, &e.params.k_norm},
                         {"bias_k", &g.params.bias_k, &e.params.bias_k},
                         {"bias_v", &g.params.bias_v, &e.params.bias_v}};
            for (const auto& [name, actual, expected] : pairs) {
                CAPTURE(name);
                REQUIRE(actual->empty() == expected->absent());
                if (expected->absent()) continue;
                REQUIRE(actual->shape() == expected->shape);
                const std::vector<float> values = actual->to_vector();
                double largest = 0.0, worst = 0.0;
                for (std::size_t i = 0; i < values.size(); ++i) {
                    largest = std::max(largest, std::fabs(expected->values[i]));
                    worst = std::max(worst, std::fabs(values[i] - expected->values[i]));
                }
                CAPTURE(worst, largest);
                CHECK(worst <= float_backward_tolerance * std::max(largest, 1.0));
            }
        }
    }
}

TEST_CASE("the softmax backward's row-sum form equals the full Jacobian form", "[backward]") {
    std::mt19937 engine(28);
    for (std::size_t trial = 0; trial < 200; ++trial) {
        const std::size_t m = 1 + trial % 13;
        std::vector<bool> blocked(m, false);
        if (trial % 2 == 1) {  // masked rows: some keys blocked (p = 0), never all
            for (std::size_t j = 1; j < m; j += 2) blocked[j] = true;
        }
        const std::vector<double> p = softmax_of(random_row(engine, m), blocked);
        const std::vector<double> dp = random_row(engine, m);
        std::vector<double> rowsum(m), jacobian(m);
        mha::softmax_row_backward(p.data(), dp.data(), rowsum.data(), m);
        mha::softmax_row_backward_jacobian(p.data(), dp.data(), jacobian.data(), m);
        for (std::size_t j = 0; j < m; ++j) {
            CAPTURE(trial, j);
            REQUIRE(std::fabs(rowsum[j] - jacobian[j]) <= forms_tolerance);
            if (blocked[j]) REQUIRE(rowsum[j] == 0.0);
        }
    }
    SECTION("a zeroed row (--masked-rows zero) gets no gradient either way") {
        const std::vector<double> p(5, 0.0), dp = {1, -2, 3, 0.5, 7};
        std::vector<double> rowsum(5), jacobian(5);
        mha::softmax_row_backward(p.data(), dp.data(), rowsum.data(), 5);
        mha::softmax_row_backward_jacobian(p.data(), dp.data(), jacobian.data(), 5);
        CHECK(rowsum == std::vector<double>(5, 0.0));
        CHECK(jacobian == std::vector<double>(5, 0.0));
    }
}

TEST_CASE("rowsum(dP * P) equals rowsum(dO * O)", "[backward]") {
    std::mt19937 engine(6);
    SECTION("random rows: O = P V, dP = dO Vᵀ") {
        for (std::size_t trial = 0; trial < 50; ++trial) {
            const std::size_t m = 1 + trial % 9, d = 1 + trial % 5;
            const std::vector<double> p = softmax_of(random_row(engine, m), std::vector<bool>(m));
            const std::vector<double> v = random_row(engine, m * d), d_o = random_row(engine, d);
            double from_p = 0.0, from_o = 0.0;
            for (std::size_t j = 0; j < m; ++j) {
                double dp = 0.0;
                for (std::size_t k = 0; k < d; ++k) dp += d_o[k] * v[j * d + k];
                from_p += dp * p[j];
            }
            for (std::size_t k = 0; k < d; ++k) {
                double o = 0.0;
                for (std::size_t j = 0; j < m; ++j) o += p[j] * v[j * d + k];
                from_o += d_o[k] * o;
            }
            REQUIRE(std::fabs(from_p - from_o) <= forms_tolerance);
        }
    }
    SECTION("the row the reference records") {
        const mha::ReferenceGradResult r =
            reference_of(double_problem(load_case(fixture_cases()[2])));
        REQUIRE(r.row.p.size() == 6);
        double from_p = 0.0;
        for (std::size_t j = 0; j < r.row.p.size(); ++j) from_p += r.row.dp[j] * r.row.p[j];
        CHECK(std::fabs(from_p - r.row.d_from_output) <= forms_tolerance);
    }
}

TEST_CASE("gradcheck's table passes right gradients and fails a wrong one", "[backward]") {
    const FixtureProblem p = load_case(fixture_cases()[1]);  // cross-attention, bias_kv, zeros
    const mha::GradcheckProblem d = double_problem(p);
    const mha::ReferenceGradResult r = reference_of(d);
    using Part = mha::WeightPart;  // the arrays of nn.MultiheadAttention(kdim, vdim, bias_kv)
    const mha::StateDictNames names = {
        {"q_proj_weight", {Part::Q}, false, {8, 8}},
        {"k_proj_weight", {Part::K}, false, {8, 6}},
        {"v_proj_weight", {Part::V}, false, {8, 5}},
        {"in_proj_bias", {Part::BiasQ, Part::BiasK, Part::BiasV}, false, {24}},
        {"bias_k", {Part::KvBiasK}, false, {1, 1, 8}},
        {"bias_v", {Part::KvBiasV}, false, {1, 1, 8}},
        {"out_proj.weight", {Part::O}, false, {8, 8}},
        {"out_proj.bias", {Part::BiasO}, false, {8}}};
    SECTION("the reference's own gradients, every element") {
        const std::vector<mha::GradcheckRow> rows = mha::gradcheck_rows(d, r.grads, names, true, 0);
        std::vector<std::string> seen;
        for (const mha::GradcheckRow& row : rows) seen.push_back(row.name);
        CHECK(seen == std::vector<std::string>{"input", "key", "value", "q_proj_weight",
                                               "k_proj_weight", "v_proj_weight", "in_proj_bias",
                                               "bias_k", "bias_v", "out_proj.weight",
                                               "out_proj.bias"});
        CHECK(rows[6].shape == mha::Shape{24});  // b_q, b_k, b_v stacked
        CHECK(rows[6].checked == 24);
        CHECK(rows[7].shape == mha::Shape{1, 1, 8});
        std::ostringstream out;
        CHECK(mha::print_gradcheck(out, rows, "every element") == 0);
        CHECK_THAT(out.str(), Catch::Contains("gradcheck passed: all 11 tensors within 1e-07"));
    }
    SECTION("one element of dW_o off by 1e-6") {
        mha::DoubleGradients wrong = r.grads;
        wrong.params.w_o.values[5] += 1e-6;
        const std::vector<mha::GradcheckRow> rows = mha::gradcheck_rows(d, wrong, names, true, 0);
        CHECK(rows[9].name == "out_proj.weight");
        CHECK(rows[9].max_diff == Approx(1e-6).epsilon(1e-2));
        CHECK(rows[9].analytic == wrong.params.w_o.values[5]);
        std::ostringstream out;
        CHECK(mha::print_gradcheck(out, rows, "every element") == 1);
        CHECK_THAT(out.str(),
                   Catch::Contains("gradcheck FAILED: 1 of 11 tensors differ by more than 1e-07") &&
                       Catch::Contains("out_proj.weight)"));
    }
    SECTION("a sample: gradcheck_sample elements of each larger tensor") {
        const std::vector<mha::GradcheckRow> rows =
            mha::gradcheck_rows(d, r.grads, names, false, 3);
        CHECK(rows[0].checked == mha::gradcheck_sample);  // input: 2·3·8 elements
        CHECK(rows[6].checked == mha::gradcheck_sample);  // in_proj_bias: 24, stacked
        CHECK(rows[7].checked == 8);                      // bias_k: all of its 8
    }
}

TEST_CASE("mha --gradcheck passes on variant combinations", "[backward]") {
    const std::string exact = "data/exact/bias_kv_zero_attn_seq_first/";
    const std::string kdim = "data/parity/kdim_vdim/";
    for (const std::string& args : std::vector<std::string>{
             "", "-b 1 -n 5 -d 8 -H 2 --causal --rope half --qk-norm --random-bias",
             "-b 2 -n 3 -m 6 -d 8 -H 4 --kv-heads 2 --alibi --window 2 --sink-tokens 1 --softcap 3",
             "-n 4 -d 12 -H 2 --head-dim 8 --no-bias --scale-base 5 --causal=top-left",
             "--weights " + exact + "weights.npz --input " + exact + "query.npy --mask " + exact +
                 "mask.npy --seq-first --add-zero-attn",
             "--weights " + kdim + "weights.npz --input " + kdim + "query.npy --key " + kdim +
                 "key.npy --value " + kdim + "value.npy --heads 4"}) {
        CAPTURE(args);
        const test::RunResult r = test::run_mha("--gradcheck " + args);
        CHECK(r.status == 0);
        CHECK_THAT(r.output, Catch::Contains("gradcheck passed"));
    }
}

TEST_CASE("mha --gradcheck passes on every PyTorch backward case", "[backward]") {
    // tests/data/grad (make_grad_fixtures.py): every layout, mask, variant and naming
    for (const test::FixtureCase& c : test::read_cases("data/grad_cases.txt")) {
        CAPTURE(c.name);
        const std::string args =
            "--gradcheck" + test::fixture_options("data/grad/" + c.name + "/") + c.options;
        const test::RunResult r = test::run_mha(args);
        if (c.name == "fully_masked") {  // NaN as in PyTorch: refused, unless zeroed
            CHECK(r.status == 2);
            CHECK_THAT(r.output, Catch::Contains("have every key blocked"));
            CHECK(test::run_mha(args + " --masked-rows zero").status == 0);
            continue;
        }
        CHECK(r.status == 0);
        CHECK_THAT(r.output, Catch::Contains("gradcheck passed"));
        if (c.name == "names_gpt2") {  // the file's own names and orientation: (E, 3E)
            CHECK_THAT(r.output, Catch::Contains("c_attn.weight | (8, 24)"));
        }
        if (c.name == "names_prefix") {
            CHECK_THAT(r.output, Catch::Contains("layers.0.self_attn.W_q.weight"));
        }
    }
}

TEST_CASE("mha --gradcheck --explain derives the softmax backward", "[backward]") {
    const test::RunResult r = test::run_mha("--gradcheck -b 1 -n 4 -d 8 -H 2 --causal --explain");
    CHECK(r.status == 0);
    CHECK_THAT(r.output, Catch::Contains("largest |row-sum form - Jacobian form| = ") &&
                             Catch::Contains("D = sum(dp * p) = "));
}

TEST_CASE("mha --gradcheck refuses what it cannot check", "[backward]") {
    test::check_rejected("--gradcheck --trace", "--gradcheck prints its own table");
    test::check_rejected("--gradcheck --format json", "--gradcheck prints its own table");
    test::check_rejected("--gradcheck --save out.npz", "--gradcheck prints its own table");
    test::check_rejected("--gradcheck --shapes-only", "--gradcheck prints its own table");
    test::check_rejected("--gradcheck --per-head", "--gradcheck differentiates the packed pass");
    test::check_rejected("--gradcheck --block pre", "--gradcheck differentiates the packed pass");
    test::check_rejected("--gradcheck --decode 4", "--gradcheck differentiates the packed pass");
    test::check_rejected("--gradcheck --attention streaming",
                         "cannot be combined with --attention streaming");
    test::check_rejected("--gradcheck -n 512 -d 1024",
                         "--gradcheck runs two double-precision forwards per checked element");
    test::check_rejected("--gradcheck -n 5 -m 3 -d 8 -H 2 --causal",
                         "query row(s) have every key blocked");
}

}  // namespace test_gradcheck
