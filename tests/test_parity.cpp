// PyTorch parity: every case in data/cases.txt (and data/modern_cases.txt) run through
// the binary with --save, compared with the output and per-head weights PyTorch computed
// (data/make_fixtures.py and data/make_modern_fixtures.py made them; see data/README.md).

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "helpers.h"
#include "io/npy.h"

namespace {

constexpr double weights_tolerance = 1e-5;  // attention weights, max abs difference
constexpr double output_tolerance = 1e-4;   // outputs, max abs difference

struct Case {
    std::string name;
    std::string options;  // from cases.txt, e.g. "--heads 4 --causal"
};

std::vector<Case> read_cases(const std::string& path = "data/cases.txt") {
    std::ifstream file(path);
    REQUIRE(file);
    std::vector<Case> cases;
    std::string line;
    while (std::getline(file, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream words(line);
        Case c;
        words >> c.name;
        std::getline(words, c.options);
        cases.push_back(c);
    }
    return cases;
}

bool exists(const std::string& path) { return std::ifstream(path).good(); }

// The file options for whichever fixture files the case folder holds.
std::string file_options(const std::string& dir) {
    std::string args = " --weights " + dir + "weights.npz --input " + dir + "query.npy";
    if (exists(dir + "key.npy")) args += " --key " + dir + "key.npy --value " + dir + "value.npy";
    if (exists(dir + "mask.npy")) args += " --mask " + dir + "mask.npy";
    if (exists(dir + "key_padding_mask.npy"))
        args += " --key-padding-mask " + dir + "key_padding_mask.npy";
    return args;
}

}  // namespace

TEST_CASE("mha reproduces PyTorch on every fixture case") {
    const std::vector<Case> cases = read_cases();
    REQUIRE(cases.size() >= 16);
    for (const Case& c : cases) {
        SECTION(c.name) {
            const std::string dir = "data/parity/" + c.name + "/";
            const std::string saved = test::temp_path(c.name + ".npz");
            const std::string args = file_options(dir) + c.options + " --save " + saved;
            INFO("mha" << args);
            const test::RunResult run = test::run_mha(args);
            REQUIRE(run.status == 0);

            const auto expected = mha::npy::read_npz(dir + "expected.npz");
            const auto actual = mha::npy::read_npz(saved);
            std::remove(saved.c_str());
            test::require_close(mha::npy::to_tensor(actual.at("attn_weights")),
                                mha::npy::to_tensor(expected.at("attn_weights")),
                                weights_tolerance);
            test::require_close(mha::npy::to_tensor(actual.at("output")),
                                mha::npy::to_tensor(expected.at("output")), output_tolerance);
        }
    }
}

TEST_CASE("mha reproduces the modern fixtures in every form that takes them", "[modern]") {
    const std::vector<Case> cases = read_cases("data/modern_cases.txt");
    REQUIRE(cases.size() >= 15);
    const std::string form = GENERATE(as<std::string>{}, "", " --per-head", " --fused-qkv",
                                      " --decode 0", " -t 3 --trace --values");
    for (const Case& c : cases) {
        const std::string dir = "data/modern/" + c.name + "/";
        const bool cross = exists(dir + "key.npy");
        const bool causal = c.options.find("--causal") != std::string::npos ||
                            c.options.find("--window") != std::string::npos;
        if ((cross && (form == " --fused-qkv" || form == " --decode 0")) ||
            (form == " --decode 0" && !causal))
            continue;
        SECTION(c.name + form) {
            const auto expected = mha::npy::read_npz(dir + "expected.npz");
            const mha::Tensor weights = mha::npy::to_tensor(expected.at("attn_weights"));
            // --decode T runs T tokens: T = N of the fixture
            const std::string run_form =
                form == " --decode 0" ? " --decode " + std::to_string(weights.size(2)) : form;
            const std::string saved = test::temp_path(c.name + ".npz");
            const std::string args = file_options(dir) + c.options + run_form + " --save " + saved;
            INFO("mha" << args);
            const test::RunResult run = test::run_mha(args + " > /dev/null");
            REQUIRE(run.status == 0);
            const auto actual = mha::npy::read_npz(saved);
            std::remove(saved.c_str());
            test::require_close(mha::npy::to_tensor(actual.at("attn_weights")), weights,
                                weights_tolerance);
            test::require_close(mha::npy::to_tensor(actual.at("output")),
                                mha::npy::to_tensor(expected.at("output")), output_tolerance);
        }
    }
}

TEST_CASE("the result does not depend on the thread count, nor on tracing") {
    const std::string dir = "data/parity/wide/";
    std::vector<std::string> outputs;
    for (const char* extra : {" -t 1", " -t 2", " -t 5 --trace --values", " -t 16 --format json"}) {
        const std::string saved = test::temp_path("threads.npz");
        REQUIRE(
            test::run_mha(file_options(dir) + " --heads 8 --save " + saved + extra, false).status ==
            0);
        std::ifstream file(saved, std::ios::binary);
        outputs.emplace_back(std::istreambuf_iterator<char>(file),
                             std::istreambuf_iterator<char>());
        std::remove(saved.c_str());
    }
    for (const std::string& bytes : outputs) CHECK(bytes == outputs.front());
}
