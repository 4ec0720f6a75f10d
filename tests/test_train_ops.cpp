// The trainer's operations and their adjoints (core/backward: LayerNorm, GELU, the residual,
// the embeddings, cross-entropy, AdamW, clipping, the schedule) against torch.autograd and
// torch.optim (tests/data/train_ops, made by make_train_op_fixtures.py), against central
// finite differences in double, and bit for bit across thread counts.

#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/backward/block_backward.h"
#include "core/backward/linear_backward.h"
#include "core/error.h"
#include "core/layers/cross_entropy.h"
#include "core/layers/embedding.h"
#include "core/layers/gelu.h"
#include "core/layers/layer_norm.h"
#include "core/layers/residual.h"
#include "core/ops/block_ops.h"
#include "core/threads/parallel.h"
#include "core/train/optimizer.h"
#include "core/train/train_step.h"
#include "io/block_weights.h"
#include "io/init.h"
#include "io/model_file.h"
#include "io/model_init.h"
#include "io/npy.h"
#include "recorder.h"

namespace test_train_ops {

using mha::Tensor;

namespace {

// Against float64 autograd on the same float32 inputs: the float32 result is that exact
// value rounded once at the end (our kernels accumulate in double), so it is within a few
// float32 ulps, 2^-24 ≈ 6e-8 each, of the largest magnitude; 1e-6 leaves room for the
// cancellation in LayerNorm's dx and softmax − onehot without hiding a wrong term (any wrong
// term is of the order of the value itself).
constexpr double float32_tolerance = 1e-6;
// Against float32 autograd: PyTorch rounds at every intermediate in float32 (its LayerNorm dx
// is 1e-6 from float64 on these inputs), so the two float32 answers differ by up to about
// ten ulps; 1e-5 relative to the largest magnitude, the brief's bound.
constexpr double torch_float32_tolerance = 1e-5;
// The block in float32 against float64 autograd: attention's matrix products round in float32
// at every step (sums of d_model or N terms), a few ulps each through four layers of adjoints;
// 1e-5 relative to the largest magnitude (float32 PyTorch itself is within 3e-7 here).
constexpr double block_tolerance = 1e-5;
// AdamW in float32, in PyTorch's order of operations: the same roundings, so at most an ulp
// or two of a parameter (the scalars are formed in double and rounded once, as PyTorch does).
constexpr double optimizer_tolerance = 1e-6;
// The schedule in double, the same formula as train.py's Python floats: the last bits of cos.
constexpr double schedule_tolerance = 1e-14;
// Central differences in double with step 1e-5: truncation error O(h²) ≈ 1e-10 times the third
// derivative, rounding error ≈ 1e-16 / 1e-5 = 1e-11; 1e-7 relative to the largest gradient.
constexpr double finite_difference_tolerance = 1e-7;
constexpr double step_h = 1e-5;

using Arrays = std::map<std::string, mha::npy::Array>;

Arrays fixture(const std::string& name) {
    return mha::npy::read_npz("data/train_ops/" + name + ".npz");
}

Tensor tensor(const Arrays& a, const std::string& name) { return mha::npy::to_tensor(a.at(name)); }

std::vector<double> values(const Tensor& t) {
    const std::vector<float> v = t.to_vector();
    return {v.begin(), v.end()};
}

// max |actual − expected| ≤ tolerance · max |expected|, reporting the worst index.
void require_relative(const std::vector<double>& actual, const std::vector<double>& expected,
                      double tolerance) {
    REQUIRE(actual.size() == expected.size());
    double largest = 0.0, worst = 0.0;
    std::size_t at = 0;
    for (std::size_t i = 0; i < expected.size(); ++i) {
        largest = std::max(largest, std::fabs(expected[i]));
        const double difference = std::fabs(actual[i] - expected[i]);
        if (!(difference <= worst)) {
            worst = difference;
            at = i;
        }
    }
    INFO("worst difference " << worst << " at flat index " << at << " (" << actual[at] << " vs "
                             << expected[at] << "), largest magnitude " << largest);
    REQUIRE(worst <= tolerance * largest);
}

void require_relative(const Tensor& actual, const Arrays& a, const std::string& name,
                      double tolerance) {
    REQUIRE(actual.shape() == a.at(name).shape);
    require_relative(values(actual), a.at(name).values, tolerance);
}

std::vector<std::size_t> indices(const mha::npy::Array& a) {
    return {a.values.begin(), a.values.end()};
}

std::vector<double> random_values(std::size_t n, unsigned seed, double scale = 1.0) {
    std::mt19937 bits(seed);  // uniform on [-scale, scale), from the bits alone (portable)
    std::vector<double> v(n);
    for (double& x : v) x = scale * (double(bits()) / 2147483648.0 - 1.0);
    return v;
}

Tensor random_tensor(const mha::Shape& shape, unsigned seed, double scale = 1.0) {
    const std::vector<double> v = random_values(mha::element_count(shape), seed, scale);
    return Tensor(shape, std::vector<float>(v.begin(), v.end()));
}

// ∂/∂x_i of loss(x) by central differences, for every i.
std::vector<double> numeric_gradient(
    std::vector<double> x, const std::function<double(const std::vector<double>&)>& loss) {
    std::vector<double> gradient(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
        const double kept = x[i];
        x[i] = kept + step_h;
        const double up = loss(x);
        x[i] = kept - step_h;
        const double down = loss(x);
        x[i] = kept;
        gradient[i] = (up - down) / (2 * step_h);
    }
    return gradient;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
    double sum = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) sum += a[i] * b[i];
    return sum;
}

bool same_bits(const Tensor& a, const Tensor& b) { return a.to_vector() == b.to_vector(); }

}  // namespace

TEST_CASE("LayerNorm's forward and backward equal autograd", "[backward]") {
    const Arrays a = fixture("layer_norm");
    const Tensor x = tensor(a, "x"), gamma = tensor(a, "gamma"), dy = tensor(a, "dy");
    const Tensor y = mha::layer_norm(x, gamma, tensor(a, "beta"));  // the block's forward
    require_relative(y, a, "y64", float32_tolerance);
    require_relative(y, a, "y32", torch_float32_tolerance);
    const mha::LayerNormGrads g = mha::layer_norm_backward(x, gamma, dy, 1);
    require_relative(g.x, a, "dx64", float32_tolerance);
    require_relative(g.gamma, a, "dgamma64", float32_tolerance);
    require_relative(g.beta, a, "dbeta64", float32_tolerance);
    require_relative(g.x, a, "dx32", torch_float32_tolerance);
    require_relative(g.gamma, a, "dgamma32", torch_float32_tolerance);
    require_relative(g.beta, a, "dbeta32", torch_float32_tolerance);
}

TEST_CASE("LayerNorm's backward equals finite differences in double", "[backward]") {
    const std::size_t rows = 3, E = 6;
    const std::vector<double> x = random_values(rows * E, 1), dy = random_values(rows * E, 2);
    const std::vector<double> gamma = random_values(E, 3), beta = random_values(E, 4);
    std::vector<double> dx(rows * E), dgamma(E), dbeta(E), y(rows * E);
    mha::layer_norm_backward_rows(x.data(), gamma.data(), dy.data(), rows, E, 1, dx.data(),
                                  dgamma.data(), dbeta.data());
    // L = Σ LN(x; γ, β) ∘ dy as a function of each argument in turn
    auto loss = [&](const std::vector<double>& in, const std::vector<double>& g,
                    const std::vector<double>& b) {
        mha::layer_norm_rows(in.data(), g.data(), b.data(), rows, E, y.data());
        return dot(y, dy);
    };
    require_relative(dx, numeric_gradient(x, [&](const auto& v) { return loss(v, gamma, beta); }),
                     finite_difference_tolerance);
    require_relative(dgamma,
                     numeric_gradient(gamma, [&](const auto& v) { return loss(x, v, beta); }),
                     finite_difference_tolerance);
    require_relative(dbeta,
                     numeric_gradient(beta, [&](const auto& v) { return loss(x, gamma, v); }),
                     finite_difference_tolerance);
}

TEST_CASE("GELU's forward and backward equal autograd", "[backward]") {
    const Arrays a = fixture("gelu");
    const Tensor u = tensor(a, "u");
    const Tensor y = mha::gelu(u);  // the block's forward: the exact erf form
    require_relative(y, a, "y64", float32_tolerance);
    require_relative(y, a, "y32", torch_float32_tolerance);
    const Tensor du = mha::gelu_backward(u, tensor(a, "dy"), 1);
    require_relative(du, a, "du64", float32_tolerance);
    require_relative(du, a, "du32", torch_float32_tolerance);
}

TEST_CASE("GELU's backward equals finite differences in double", "[backward]") {
    const std::vector<double> u = random_values(12, 5, 2.0), dy = random_values(12, 6);
    std::vector<double> du(u.size()), y(u.size());
    mha::gelu_backward_values(u.data(), dy.data(), u.size(), du.data());
    require_relative(du,
                     numeric_gradient(u,
                                      [&](const std::vector<double>& v) {
                                          mha::gelu_values(v.data(), v.size(), y.data());
                                          return dot(y, dy);
                                      }),
                     finite_difference_tolerance);
}

TEST_CASE("the residual's adjoint adds the skip path to the branch's gradient", "[backward]") {
    // out = x + LN(x): ∂L/∂x = dOut + LN'(x)ᵀ dOut, checked by finite differences in double
    const std::size_t rows = 2, E = 5;
    const std::vector<double> x = random_values(rows * E, 7), d_out = random_values(rows * E, 8);
    const std::vector<double> gamma = random_values(E, 9), beta = random_values(E, 10);
    const Tensor xf(mha::Shape{rows, E}, std::vector<float>(x.begin(), x.end()));
    const Tensor d_out_f(mha::Shape{rows, E}, std::vector<float>(d_out.begin(), d_out.end()));
    const Tensor gamma_f(mha::Shape{E}, std::vector<float>(gamma.begin(), gamma.end()));
    const Tensor dx =
        mha::residual_backward(d_out_f, mha::layer_norm_backward(xf, gamma_f, d_out_f, 1).x, 1);
    std::vector<double> y(rows * E);
    const std::vector<double> numeric = numeric_gradient(x, [&](const std::vector<double>& v) {
        mha::layer_norm_rows(v.data(), gamma.data(), beta.data(), rows, E, y.data());
        return dot(y, d_out) + dot(v, d_out);
    });
    // float32 inputs and outputs against the double derivative: float32 rounding
    require_relative(values(dx), numeric, float32_tolerance);
}

TEST_CASE("the embeddings' forward and scatter-add backward equal autograd", "[backward]") {
    const Arrays a = fixture("embedding");
    const std::vector<std::size_t> tokens = indices(a.at("tokens"));
    const Tensor x = mha::embed(tensor(a, "token_weight"), tensor(a, "position_weight"), tokens, 2);
    require_relative(x, a, "x32", 0.0);  // one float32 addition each, as PyTorch's
    const mha::EmbeddingGrads g = mha::embed_backward(tensor(a, "dx"), tokens, 7, 6, 1);
    require_relative(g.token, a, "dtoken64", float32_tolerance);
    require_relative(g.position, a, "dposition64", float32_tolerance);
    require_relative(g.token, a, "dtoken32", torch_float32_tolerance);
    require_relative(g.position, a, "dposition32", torch_float32_tolerance);
    // token 6 is never read and position 5 lies past N = 5: their rows stay zero
    for (std::size_t f = 0; f < 8; ++f) {
        CHECK(g.token.at({6, f}) == 0.0f);
        CHECK(g.position.at({5, f}) == 0.0f);
    }
}

TEST_CASE("the embeddings refuse tokens that do not fit the tables", "[backward]") {
    const Tensor token({3, 2}), position({4, 2});
    REQUIRE_THROWS_WITH(mha::embed(token, position, {0, 3}, 1),
                        "token 3 at position 1 is not below the vocabulary size 3");
    REQUIRE_THROWS_WITH(mha::embed(token, position, {0, 1, 2, 0, 1}, 1),
                        "the embeddings read B rows of 1 to 4 tokens each (B = 1), got 5 tokens");
    REQUIRE_THROWS_WITH(mha::embed_backward(Tensor({1, 3, 2}), {0, 1}, 3, 4, 1),
                        "the embeddings' gradient (1, 3, 2) does not match 2 tokens");
}

TEST_CASE("cross-entropy's loss and dlogits equal autograd", "[backward]") {
    const Arrays a = fixture("cross_entropy");
    const mha::CrossEntropy ce =
        mha::cross_entropy(tensor(a, "logits"), indices(a.at("targets")), 1);
    // the loss is summed in double from float32 logits: against float64, float32 input
    // rounding does not enter (both start from the same float32 logits), so 1e-12
    CHECK(ce.loss == Approx(a.at("loss64").values[0]).epsilon(1e-12));
    CHECK(ce.loss == Approx(a.at("loss32").values[0]).epsilon(torch_float32_tolerance));
    require_relative(ce.dlogits, a, "dlogits64", float32_tolerance);
    require_relative(ce.dlogits, a, "dlogits32", torch_float32_tolerance);
}

TEST_CASE("cross-entropy's backward equals finite differences in double", "[backward]") {
    const std::size_t rows = 4, V = 5;
    const std::vector<double> z = random_values(rows * V, 11, 3.0);
    const std::vector<std::size_t> targets{0, 4, 2, 2};
    std::vector<double> dz(z.size()), scratch(z.size());
    mha::cross_entropy_rows(z.data(), targets.data(), rows, V, 1, dz.data(), rows);
    require_relative(dz,
                     numeric_gradient(z,
                                      [&](const std::vector<double>& v) {
                                          return mha::cross_entropy_rows(v.data(), targets.data(),
                                                                         rows, V, 1, scratch.data(),
                                                                         rows);
                                      }),
                     finite_difference_tolerance);
}

TEST_CASE("cross-entropy refuses targets that do not fit the logits", "[backward]") {
    const Tensor logits({1, 2, 3});
    REQUIRE_THROWS_WITH(mha::cross_entropy(logits, {0, 3}, 1),
                        "cross-entropy: target 3 at row 1 is not below the vocabulary size 3");
    REQUIRE_THROWS_WITH(mha::cross_entropy(logits, {0}, 1),
                        "cross-entropy: 1 targets for 2 rows of logits (1, 2, 3)");
}

TEST_CASE("AdamW takes three steps as torch.optim.AdamW does", "[backward]") {
    const Arrays a = fixture("adamw");
    Tensor matrix = tensor(a, "matrix"), vector = tensor(a, "vector");
    mha::AdamWMoments matrix_moments = mha::adamw_moments(matrix.shape());
    mha::AdamWMoments vector_moments = mha::adamw_moments(vector.shape());
    const mha::AdamWSettings settings;  // the recipe: β 0.9, 0.95, eps 1e-8, decay 0.01
    // train.py's groups: linear weights decay; biases, norms and embeddings do not
    CHECK(mha::takes_weight_decay("layers.0.linear1.weight", 2));
    CHECK(mha::takes_weight_decay("lm_head.weight", 2));
    CHECK_FALSE(mha::takes_weight_decay("layers.0.linear1.bias", 1));
    CHECK_FALSE(mha::takes_weight_decay("layers.0.norm1.weight", 1));
    CHECK_FALSE(mha::takes_weight_decay("token_embedding.weight", 2));
    for (std::size_t step = 0; step < 3; ++step) {
        const double lr = a.at("lrs").values[step];
        const std::string s = std::to_string(step);
        mha::adamw_step(matrix, tensor(a, "matrix_grad" + s), matrix_moments, step + 1, lr,
                        settings.weight_decay, settings, 1);
        mha::adamw_step(vector, tensor(a, "vector_grad" + s), vector_moments, step + 1, lr, 0.0,
                        settings, 1);
        CAPTURE(step);
        require_relative(matrix, a, "matrix" + s, optimizer_tolerance);
        require_relative(vector, a, "vector" + s, optimizer_tolerance);
    }
}

TEST_CASE("clipping by the global norm follows clip_grad_norm_", "[backward]") {
    const Arrays a = fixture("clip");
    for (const std::string c : {"large", "small"}) {
        CAPTURE(c);
        Tensor first = tensor(a, c + "_first"), second = tensor(a, c + "_second");
        const double norm = mha::clip_grad_norm({&first, &second}, 1.0);
        // PyTorch sums each norm in float32; ours in double: float32 rounding
        CHECK(norm == Approx(a.at(c + "_norm").values[0]).epsilon(float32_tolerance));
        require_relative(first, a, c + "_first_clipped", float32_tolerance);
        require_relative(second, a, c + "_second_clipped", float32_tolerance);
    }
}

TEST_CASE("the learning rate warms up, then follows train.py's cosine", "[backward]") {
    const Arrays a = fixture("schedule");
    const std::vector<std::size_t> steps = indices(a.at("steps"));
    for (std::size_t i = 0; i < steps.size(); ++i) {
        CAPTURE(steps[i]);
        CHECK(mha::learning_rate(steps[i], 3000, 3e-3, 100) ==
              Approx(a.at("lrs").values[i]).epsilon(schedule_tolerance));
    }
}

TEST_CASE("the trainer's operations give the same bits at any thread count", "[backward]") {
    // sizes past threads_for's threshold, so more than one thread really runs
    const std::size_t B = 16, N = 128, E = 64, V = 512;
    const Tensor x = random_tensor({B, N, E}, 12), dy = random_tensor({B, N, E}, 13);
    const Tensor gamma = random_tensor({E}, 14), beta = random_tensor({E}, 17);
    const Tensor logits = random_tensor({B, N, V}, 15, 3.0);
    std::vector<std::size_t> tokens(B * N);
    for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = (i * 7919) % V;
    const mha::LayerNormGrads norm1 = mha::layer_norm_backward(x, gamma, dy, 1);
    const mha::EmbeddingGrads embed1 = mha::embed_backward(dy, tokens, V, N, 1);
    const mha::CrossEntropy ce1 = mha::cross_entropy(logits, tokens, 1);
    const Tensor gelu1 = mha::gelu_backward(x, dy, 1);
    Tensor param1 = random_tensor({V, E}, 16);
    mha::AdamWMoments moments1 = mha::adamw_moments(param1.shape());
    mha::adamw_step(param1, embed1.token, moments1, 1, 1e-3, 0.01, {}, 1);
    for (const std::size_t threads : {2, 3, 4}) {
        CAPTURE(threads);
        const mha::LayerNormGrads norm = mha::layer_norm_backward(x, gamma, dy, threads);
        CHECK(same_bits(norm.x, norm1.x));
        CHECK(same_bits(norm.gamma, norm1.gamma));
        CHECK(same_bits(norm.beta, norm1.beta));
        const mha::EmbeddingGrads embed = mha::embed_backward(dy, tokens, V, N, threads);
        CHECK(same_bits(embed.token, embed1.token));
        CHECK(same_bits(embed.position, embed1.position));
        const mha::CrossEntropy ce = mha::cross_entropy(logits, tokens, threads);
        CHECK(ce.loss == ce1.loss);
        CHECK(same_bits(ce.dlogits, ce1.dlogits));
        CHECK(same_bits(mha::gelu_backward(x, dy, threads), gelu1));
        CHECK(same_bits(mha::gelu(x, threads), mha::gelu(x, 1)));
        CHECK(same_bits(mha::layer_norm(x, gamma, beta, threads),
                        mha::layer_norm(x, gamma, beta, 1)));
        Tensor param = random_tensor({V, E}, 16);
        mha::AdamWMoments moments = mha::adamw_moments(param.shape());
        mha::adamw_step(param, embed.token, moments, 1, 1e-3, 0.01, {}, threads);
        CHECK(same_bits(param, param1));
        CHECK(same_bits(mha::add(x, dy, threads), mha::add(x, dy, 1)));
        CHECK(same_bits(mha::linear_bias_grad(logits.data(), B * N, V, threads),
                        mha::linear_bias_grad(logits.data(), B * N, V, 1)));
    }
}

TEST_CASE("a step's micro-batches: 512 positions of whole rows, at most 8 of them", "[backward]") {
    const auto split = [](std::size_t batch, std::size_t n) {
        const mha::MicroBatches m = mha::micro_batches(batch, n, 512);
        return std::pair<std::size_t, std::size_t>{m.rows, m.count};
    };
    using Split = std::pair<std::size_t, std::size_t>;
    CHECK(split(32, 128) == Split{4, 8});      // the default recipe
    CHECK(split(30, 128) == Split{4, 8});      // the last has 2 rows
    CHECK(split(2, 128) == Split{4, 1});       // all in one
    CHECK(split(3, 1000) == Split{1, 3});      // a row longer than 512: one row each
    CHECK(split(1024, 128) == Split{128, 8});  // more would be past 8: larger ones
    CHECK(split(0, 128).second == 0);
}

TEST_CASE("train_step's micro-batches run side by side: the same bits at any thread count",
          "[backward]") {
    // 6 rows of 16 positions in micro-batches of 2 rows and a step's sums against one pass
    std::vector<std::uint32_t> vocab(12);
    for (std::size_t i = 1; i < vocab.size(); ++i) vocab[i] = std::uint32_t('a' + i);
    // each state its own seeded model: a copy of a Model shares its storage
    const auto fresh = [&] {
        return mha::start_training(mha::seeded_model(vocab, {2, 16, 2, 32, 16}, 3));
    };
    std::vector<std::size_t> tokens(6 * 16), targets(6 * 16);
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        tokens[i] = (i * 7 + 3) % vocab.size();
        targets[i] = (i * 5 + 1) % vocab.size();
    }
    mha::TrainRecipe recipe;
    recipe.micro_batch = 32;
    mha::TrainState one = fresh();
    const mha::StepResult first = mha::train_step(one, tokens, targets, 6, recipe, 1);
    for (const std::size_t threads : {2, 3}) {
        CAPTURE(threads);
        mha::TrainState state = fresh();
        const mha::StepResult r = mha::train_step(state, tokens, targets, 6, recipe, threads);
        CHECK(r.loss == first.loss);
        CHECK(r.grad_norm == first.grad_norm);
        const auto a = mha::model_arrays(one.model, ""), b = mha::model_arrays(state.model, "");
        for (std::size_t i = 0; i < a.size(); ++i) {
            CAPTURE(a[i].first);
            CHECK(same_bits(a[i].second, b[i].second));
        }
    }
    // the loss is the whole batch's mean: the same as one pass over it, to rounding
    mha::TrainState whole = fresh();
    recipe.micro_batch = 6 * 16;
    CHECK(mha::train_step(whole, tokens, targets, 6, recipe, 2).loss ==
          Approx(first.loss).epsilon(1e-6));
}

TEST_CASE("a linear layer's dW has the bits of dYᵀ X whichever of out and in is larger",
          "[backward]") {
    // 300 rows: two of gemm's 256-deep slices. out > in takes dWᵀ = Xᵀ dY, then transposes.
    const std::size_t rows = 300;
    for (const auto& [out, in] : {std::pair<std::size_t, std::size_t>{40, 24}, {24, 40}}) {
        CAPTURE(out, in);
        const Tensor dy = random_tensor({rows, out}, 21), x = random_tensor({rows, in}, 22);
        const Tensor w = random_tensor({out, in}, 23);
        const Tensor dw = mha::linear_backward(x, w, false, dy, 2).dw;
        Tensor direct({out, in});
        mha::gemm({dy.data(), out, rows, 1, out}, {x.data(), rows, in, in, 1}, direct.data(), in);
        CHECK(same_bits(dw, direct));
        double worst = 0.0;  // and it is dYᵀ X: against sums in double
        for (std::size_t o = 0; o < out; ++o) {
            for (std::size_t i = 0; i < in; ++i) {
                double sum = 0.0;
                for (std::size_t r = 0; r < rows; ++r)
                    sum += double(dy.data()[r * out + o]) * x.data()[r * in + i];
                worst = std::max(worst, std::fabs(sum - dw.data()[o * in + i]));
            }
        }
        CHECK(worst < 1e-4);
    }
}

TEST_CASE(
    "a linear layer's gradients have the same bits at any thread count, its products split "
    "by rows (m <= n) or by columns (m > n)",
    "[backward]") {
    // dW and dX run at once, each in parts. (rows, out, in): dW split by columns and dX by
    // rows; dWᵀ by columns and dX by rows; dW and dX both by columns. 600-deep sums are three of
    // gemm's slices; 200 columns are 6 blocks of 32 and a part block of 8; 2 x 4.8 million
    // multiply-adds are enough for 4 threads.
    for (const auto& [rows, out, in] :
         {std::tuple<std::size_t, std::size_t, std::size_t>{600, 40, 200},
          {600, 200, 40},
          {40, 600, 200}}) {
        const Tensor x = random_tensor({rows, in}, 31), w = random_tensor({out, in}, 32);
        const Tensor dy = random_tensor({rows, out}, 33);
        const mha::LinearGrads one = mha::linear_backward(x, w, true, dy, 1);
        Tensor dx({rows, in});  // one thread: dX is gemm's own product
        mha::gemm({dy.data(), rows, out, out, 1}, {w.data(), out, in, in, 1}, dx.data(), in);
        CHECK(same_bits(one.dx, dx));
        for (const std::size_t threads : {2, 3, 4}) {
            CAPTURE(rows, out, in, threads);
            REQUIRE(mha::threads_for(2 * std::uint64_t(rows) * out * in, threads) == threads);
            const mha::LinearGrads split = mha::linear_backward(x, w, true, dy, threads);
            CHECK(same_bits(split.dw, one.dw));
            CHECK(same_bits(split.dx, one.dx));
            CHECK(same_bits(split.db, one.db));
        }
    }
}

TEST_CASE("a linear layer with no outputs passes back zero", "[backward]") {
    // dX = dY W sums no products: zero, in dy's leading shape; dW and db are empty
    const Tensor x = random_tensor({2, 4, 3}, 41), w({0, 3}), dy({2, 4, 0});
    const mha::LinearGrads g = mha::linear_backward(x, w, true, dy, 2);
    CHECK(g.dx.shape() == mha::Shape{2, 4, 3});
    for (std::size_t e = 0; e < g.dx.numel(); ++e) CHECK(g.dx.data()[e] == 0.0f);
    CHECK(g.dw.shape() == mha::Shape{0, 3});
    CHECK(g.db.shape() == mha::Shape{0});
}

TEST_CASE("the block's backward equals nn.TransformerEncoderLayer's autograd", "[backward]") {
    // d_model 8, 2 heads, d_ff 16, GELU, dropout 0; pre-LN under a causal mask, post-LN without
    const auto [name, kind, causal] =
        GENERATE(std::make_tuple(std::string("block_pre"), mha::BlockKind::Pre, true),
                 std::make_tuple(std::string("block_post"), mha::BlockKind::Post, false));
    CAPTURE(name);
    const mha::BlockState state = mha::block_from_state_dict(
        mha::npy::read_npz("data/train_ops/" + name + "_weights.npz"), name + ".npz");
    const Arrays a = fixture(name);
    const Tensor x = tensor(a, "x");
    mha::Masks masks;
    masks.causal = causal;
    mha::ForwardOptions options;
    options.heads = 2;
    test::Recorder rec;
    const mha::BlockBackwardResult r =
        mha::block_forward_backward(state.attention, state.block, kind, {x, x, x}, masks, options,
                                    tensor(a, "grad_output"), rec);
    require_relative(r.forward.output, a, "output64", block_tolerance);
    const mha::BlockGradients& g = r.grads;
    require_relative(g.input, a, "grad.input64", block_tolerance);
    const std::pair<const Tensor*, std::string> block[] = {
        {&g.block.norm1_weight, "norm1.weight"},
        {&g.block.norm1_bias, "norm1.bias"},
        {&g.block.norm2_weight, "norm2.weight"},
        {&g.block.norm2_bias, "norm2.bias"},
        {&g.block.w_1, "linear1.weight"},
        {&g.block.b_1, "linear1.bias"},
        {&g.block.w_2, "linear2.weight"},
        {&g.block.b_2, "linear2.bias"},
        {&g.attention.w_o, "self_attn.out_proj.weight"},
        {&g.attention.b_o, "self_attn.out_proj.bias"}};
    for (const auto& [grad, param] : block) {
        CAPTURE(param);
        require_relative(*grad, a, "grad." + param + "64", block_tolerance);
    }
    // in_proj_weight (3·d_model, d_model) and in_proj_bias stack W_q, W_k, W_v and theirs;
    // compared stacked, relative to the stack's largest magnitude (d b_k is 0 in exact
    // arithmetic: a bias on every key adds the same to a query's scores)
    std::vector<double> in_proj, in_proj_bias;
    for (const Tensor* w : {&g.attention.w_q, &g.attention.w_k, &g.attention.w_v}) {
        const std::vector<double> v = values(*w);
        in_proj.insert(in_proj.end(), v.begin(), v.end());
    }
    for (const Tensor* b : {&g.attention.b_q, &g.attention.b_k, &g.attention.b_v}) {
        const std::vector<double> v = values(*b);
        in_proj_bias.insert(in_proj_bias.end(), v.begin(), v.end());
    }
    require_relative(in_proj, a.at("grad.self_attn.in_proj_weight64").values, block_tolerance);
    require_relative(in_proj_bias, a.at("grad.self_attn.in_proj_bias64").values, block_tolerance);
    // the forward is traced as forward_block traces it, step for step; then the backward:
    // the block's own steps in reverse around attention's b14-b0, each tensor as planned
    test::Recorder forward_only;
    mha::forward_block(state.attention, state.block, kind, {x, x, x}, masks, options, forward_only);
    std::vector<std::string> backward;
    for (std::size_t i = 0; i < rec.steps.size(); ++i) {
        const mha::Step& step = rec.steps[i];
        if (step.backward) {
            backward.push_back("b" + std::to_string(step.number) + " " + step.tensor);
            if (rec.seen[i]) CHECK(rec.seen[i]->shape == step.shape);
            continue;
        }
        REQUIRE(i < forward_only.steps.size());
        CHECK(step.number == forward_only.steps[i].number);
        CHECK(step.tensor == forward_only.steps[i].tensor);
    }
    CHECK(rec.steps.size() - backward.size() == forward_only.steps.size());
    const std::vector<std::string> head =
        kind == mha::BlockKind::Pre
            ? std::vector<std::string>{"b21 dout",        "b20 dW_2",        "b20 db_2",
                                       "b20 dgelu",       "b19 dffn_hidden", "b18 dW_1",
                                       "b18 db_1",        "b18 dh_norm",     "b17 dnorm2.weight",
                                       "b17 dnorm2.bias", "b17 dh_ffn",      "b16 dh",
                                       "b14 dOut"}
            : std::vector<std::string>{
                  "b21 dout",          "b21 dnorm2.weight", "b21 dnorm2.bias", "b21 ds",
                  "b19 dW_2",          "b19 db_2",          "b19 dgelu",       "b18 dffn_hidden",
                  "b17 dW_1",          "b17 db_1",          "b17 dh_ffn",      "b20 dh",
                  "b16 dnorm1.weight", "b16 dnorm1.bias",   "b16 dsum",        "b14 dOut"};
    const std::vector<std::string> tail =
        kind == mha::BlockKind::Pre
            ? std::vector<std::string>{"b0 dx_norm", "b15 dnorm1.weight", "b15 dnorm1.bias",
                                       "b15 dx", "b15 dx"}
            : std::vector<std::string>{"b0 dx", "b15 dx"};
    REQUIRE(backward.size() > head.size() + tail.size());
    CHECK(std::vector<std::string>(backward.begin(), backward.begin() + head.size()) == head);
    CHECK(std::vector<std::string>(backward.end() - tail.size(), backward.end()) == tail);
    // attention's steps say what they read in the block: its output's gradient is the block's
    // (dh pre-LN, dsum post-LN) and pre-LN's projections read x_norm = norm1(x)
    const auto expression = [&](const std::string& tensor) {
        for (const mha::Step& step : rec.steps) {
            if (step.backward && step.tensor == tensor) return step.expression;
        }
        return std::string();
    };
    CHECK(expression("dOut") == (kind == mha::BlockKind::Pre
                                     ? "dOut = dh  (attention's output feeds h = x + attention)"
                                     : "dOut = dsum  (attention's output feeds x + attention)"));
    CHECK(expression("dW_q") == (kind == mha::BlockKind::Pre
                                     ? "dW_q = dQ.T @ x_norm  (summed over B and the positions)"
                                     : "dW_q = dQ.T @ x  (summed over B and the positions)"));
}

TEST_CASE("the block's backward gives the same bits at any thread count", "[backward]") {
    // sizes past threads_for's threshold in the FFN, the norms and attention's units
    const std::size_t B = 4, N = 64, E = 64, d_ff = 256;
    const mha::Weights attention = mha::seeded_weights(E, true, true, 3);
    const mha::BlockWeights block = mha::seeded_block(E, d_ff, 3);
    const mha::Inputs in = mha::seeded_inputs({B, N, N, E, E, E, 4, 4, E / 4}, true, 3);
    const Tensor grad_output = random_tensor({B, N, E}, 17);
    mha::Masks masks;
    masks.causal = true;
    const auto kind = GENERATE(mha::BlockKind::Pre, mha::BlockKind::Post);
    auto run = [&](std::size_t threads) {
        mha::ForwardOptions options;
        options.heads = 4;
        options.threads = threads;
        mha::NullTracer quiet;
        return mha::block_forward_backward(attention, block, kind, in, masks, options, grad_output,
                                           quiet)
            .grads;
    };
    const mha::BlockGradients one = run(1), four = run(4);
    CHECK(same_bits(one.input, four.input));
    CHECK(same_bits(one.attention.w_q, four.attention.w_q));
    CHECK(same_bits(one.attention.w_o, four.attention.w_o));
    CHECK(same_bits(one.block.norm1_weight, four.block.norm1_weight));
    CHECK(same_bits(one.block.norm2_bias, four.block.norm2_bias));
    CHECK(same_bits(one.block.w_1, four.block.w_1));
    CHECK(same_bits(one.block.b_2, four.block.b_2));
}

}  // namespace test_train_ops
