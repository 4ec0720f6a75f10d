// The trainer (core/train/train_step.h): its parameters in the file's order, steps that lower
// the loss, and the same bits at any thread count.

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "core/train/parameters.h"
#include "core/train/train_step.h"
#include "io/model_file.h"
#include "io/npy.h"

namespace {

const std::string tiny_path = "data/model_grad/model.npz";  // data/make_model_grad_fixture.py

// train.py's CharTransformer: V 7, d_model 8, 2 heads, 2 layers, d_ff 16, context 6.
mha::Model tiny_model() { return mha::model_from_arrays(mha::npy::read_npz(tiny_path), tiny_path); }

// Two rows of 6 tokens and their next tokens, a repeating pattern the model can learn.
const std::vector<std::size_t> tokens = {1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6};
const std::vector<std::size_t> targets = {2, 3, 1, 2, 3, 1, 5, 6, 4, 5, 6, 4};

}  // namespace

TEST_CASE("the trainer's parameters are the model file's arrays, in its order", "[train]") {
    mha::Model model = tiny_model();
    const auto arrays = mha::model_arrays(model, "");
    const std::vector<mha::Parameter> params = mha::model_parameters(model);
    REQUIRE(params.size() == arrays.size());
    for (std::size_t i = 0; i < params.size(); ++i) {
        CAPTURE(arrays[i].first);
        CHECK(params[i].name == arrays[i].first);
        CHECK(params[i].shape == arrays[i].second.shape());
        CHECK(mha::gather_parameter(params[i]).to_vector() == arrays[i].second.to_vector());
    }
}

TEST_CASE("a few training steps lower the loss, the same bits at 1 and 2 threads", "[train]") {
    mha::TrainRecipe recipe;
    recipe.steps = 20;
    recipe.warmup = 2;
    recipe.lr = 1e-2;
    mha::TrainState one = mha::start_training(tiny_model());
    mha::TrainState two = mha::start_training(tiny_model());
    REQUIRE(one.moments.size() == 30);  // 2 embeddings, 12 per layer, norm and head's 2 each
    std::vector<double> losses;
    for (std::size_t s = 0; s < 10; ++s) {
        const mha::StepResult a = mha::train_step(one, tokens, targets, 2, recipe, 1);
        const mha::StepResult b = mha::train_step(two, tokens, targets, 2, recipe, 2);
        CHECK(a.loss == b.loss);
        CHECK(a.grad_norm == b.grad_norm);
        CHECK(a.lr == mha::learning_rate(s, recipe.steps, recipe.lr, recipe.warmup));
        losses.push_back(a.loss);
    }
    CHECK(one.step == 10);
    // the loss falls step after step on the one batch it learns (not only overall)
    for (std::size_t s = 3; s < losses.size(); ++s) CHECK(losses[s] < losses[s - 1]);
    CHECK(losses.back() < 0.8 * losses.front());
    const auto a = mha::model_arrays(one.model, ""), b = mha::model_arrays(two.model, "");
    for (std::size_t i = 0; i < a.size(); ++i) {
        CAPTURE(a[i].first);
        CHECK(a[i].second.to_vector() == b[i].second.to_vector());
        CHECK(one.moments[i].m.to_vector() == two.moments[i].m.to_vector());
        CHECK(one.moments[i].v.to_vector() == two.moments[i].v.to_vector());
    }
}
