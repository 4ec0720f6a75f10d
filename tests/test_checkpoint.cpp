// Real checkpoints (issue 46): every tiny Hugging Face fixture of tests/data/checkpoints run
// through the one pass and compared with its PyTorch reference; config.json's refusals.

#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/forms/model.h"
#include "io/checkpoint/config.h"
#include "io/checkpoint/load.h"
#include "io/npy.h"

namespace {

using Arrays = std::map<std::string, mha::npy::Array>;
namespace ck = mha::checkpoint;

const std::string checkpoints = "data/checkpoints/";

// Logits within this of the reference, relative to its largest |logit| (issue 46).
constexpr double logit_tolerance = 1e-4;
// Attention weights within this, absolutely (they lie in [0, 1]).
constexpr double weight_tolerance = 1e-5;
// The residual stream within this of the reference, relative to its largest |value|.
constexpr double hidden_tolerance = 1e-4;

// max |a − b| / max |b| (or absolute when relative is false), shapes checked first.
double difference(const mha::Tensor& actual, const mha::npy::Array& expected, bool relative) {
    REQUIRE(actual.shape() == expected.shape);
    const std::vector<float> a = actual.to_vector();
    double worst = 0, largest = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        worst = std::max(worst, std::fabs(double(a[i]) - expected.values[i]));
        largest = std::max(largest, std::fabs(expected.values[i]));
    }
    return relative ? worst / largest : worst;
}

struct Run {
    mha::ModelResult result;
    Arrays expected;
};

// The fixture's tokens through the checkpoint, every hidden state kept.
Run run_fixture(const std::string& name) {
    const std::string dir = checkpoints + name;
    Run run;
    run.expected = mha::npy::read_npz(dir + "/expected.npz");
    std::vector<std::size_t> tokens;
    for (double t : run.expected.at("tokens").values) tokens.push_back(std::size_t(t));
    const ck::Checkpoint checkpoint = ck::open_checkpoint(dir, mha::Ledger());
    mha::Ledger ledger;
    const ck::Prompt prompt = ck::read_prompt(checkpoint, tokens, ledger);
    const mha::ModelSource source = ck::checkpoint_source(checkpoint, 7, ledger);
    mha::NullTracer quiet;
    run.result = mha::forward_model(prompt.model, source, prompt.rows, 0, 1, quiet, true);
    return run;
}

}  // namespace

TEST_CASE("every tiny checkpoint matches its PyTorch reference", "[checkpoint]") {
    for (const char* name : {"gpt2", "gpt2_prefixed", "llama2", "llama_linear", "llama3_v4",
                             "llama3_v5", "mistral", "qwen2", "qwen3", "gemma2", "gemma3_text",
                             "gemma3"}) {
        INFO(name);
        const Run run = run_fixture(name);
        CHECK(difference(run.result.logits, run.expected.at("logits"), true) < logit_tolerance);
        for (std::size_t l = 0; l < run.result.weights.size(); ++l) {
            INFO("layer " << l);
            CHECK(difference(run.result.weights[l],
                             run.expected.at("attn_weights." + std::to_string(l)), false) <
                  weight_tolerance);
        }
        for (std::size_t l = 0; l < run.result.hidden.size(); ++l) {
            INFO("hidden " << l);
            CHECK(difference(run.result.hidden[l], run.expected.at("hidden." + std::to_string(l)),
                             true) < hidden_tolerance);
        }
    }
}
