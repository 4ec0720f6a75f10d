// The trainer: core/train/train_step.h (its parameters in the file's order, steps that lower
// the loss, the same bits at any thread count) and mha train (app/train/train*.h: the corpus, the
// batches, the initial weights, the checkpoint, and the command's resume, Ctrl-C, full disk,
// divergence and --save-batches).

#include <signal.h>

#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "app/train/train_checkpoint.h"
#include "app/train/train_data.h"
#include "core/train/parameters.h"
#include "core/train/train_step.h"
#include "helpers.h"
#include "io/model_file.h"
#include "io/model_init.h"
#include "io/npy.h"
#include "io/printable.h"
#include "io/shipped_corpus.h"

namespace test_train {

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

// ---- mha train: data, initial weights, checkpoints, the command ----------------------------

namespace {

namespace fs = std::filesystem;

// Small sizes that train in a few milliseconds a step.
const std::string small_sizes = "--context 16 --batch 4 -d 16 -H 2 --d-ff 32";

mha::Corpus shipped() {
    static const mha::Corpus corpus =
        mha::read_corpus(std::string(mha::shipped_corpus()), "the shipped corpus");
    return corpus;
}

// Every array of an .npz but those named in `skip`, by name.
std::map<std::string, mha::npy::Array> arrays_without(const std::string& path,
                                                      const std::vector<std::string>& skip) {
    std::map<std::string, mha::npy::Array> arrays = mha::npy::read_npz(path);
    for (const std::string& name : skip) arrays.erase(name);
    return arrays;
}

// What a file holds so far ("" before it exists).
std::string text_so_far(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace

TEST_CASE("the shipped corpus: its vocabulary, its split and its fingerprint", "[train]") {
    const mha::Corpus& c = shipped();
    // examples/corpus/README.md: 1,572,796 characters, 61 distinct ones, plus the unknown token
    CHECK(c.characters == 1572796);
    CHECK(c.vocab.size() == 62);
    CHECK(c.vocab[0] == 0);
    CHECK(std::is_sorted(c.vocab.begin(), c.vocab.end()));
    // the last 3%: int(1,572,796 · 0.97) = 1,525,612 characters to train on
    CHECK(c.train.size() == 1525612);
    CHECK(c.held_out.size() == c.characters - c.train.size());
    CHECK(c.held_out_characters.size() == c.held_out.size());
    CHECK(std::count(c.train.begin(), c.train.end(), 0) == 0);  // every character in the vocabulary
}

TEST_CASE("a corpus: characters past the 255 most frequent and stray bytes are unknown",
          "[train]") {
    // 300 distinct characters U+0100.. with counts 300, 299, ..., 1 (U+0100 most frequent), then
    // one stray byte: the 255 most frequent stay (U+0100 ... U+01FE), the rest become token 0
    std::string text;
    for (std::uint32_t k = 0; k < 300; ++k)
        for (std::uint32_t n = 0; n < 300 - k; ++n) text += mha::utf8_encode(0x100 + k);
    text += '\xFF';
    const mha::Corpus c = mha::read_corpus(text, "test");
    REQUIRE(c.vocab.size() == 256);
    CHECK(c.vocab[1] == 0x100);
    CHECK(c.vocab[255] == 0x1FE);
    // the held-out part: the tail of the rarest characters and the stray byte
    CHECK(c.held_out.back() == 0);
    CHECK(c.held_out_characters.back() == "\xFF");
    CHECK(std::count(c.train.begin(), c.train.end(), 0) == 0);
    REQUIRE_THROWS_WITH(mha::read_corpus("", "e.txt"),
                        "e.txt is empty; mha train needs UTF-8 text to learn from");
    REQUIRE_THROWS_WITH(mha::read_corpus(std::string("ab\0c", 4), "b.bin"),
                        "b.bin looks binary (a NUL byte at offset 2); mha train reads UTF-8 text");
    REQUIRE_THROWS_WITH(mha::read_corpus("abcdefgh\xFE\xFF", "b.bin"),
                        "b.bin looks binary (2 of its 10 characters are not UTF-8); mha train "
                        "reads UTF-8 text");
    CHECK_NOTHROW(mha::read_corpus("abcdefghijklmnopqrs\xFF", "one in 20 is fine"));
}

TEST_CASE("a corpus: characters past U+FFFF are tokens like any other", "[train]") {
    // a 😀 a 😀 a 𝄞 b: counts a 3, U+1F600 2, U+1D11E 1, b 1; the vocabulary by code point
    const mha::Corpus c = mha::read_corpus("a\U0001F600a\U0001F600a\U0001D11Eb", "test");
    CHECK(c.vocab == std::vector<std::uint32_t>{0, 'a', 'b', 0x1D11E, 0x1F600});
    CHECK(c.characters == 7);
    // int(7 · 0.97) = 6 characters to train on, then b held out
    CHECK(c.train == std::vector<std::uint8_t>{1, 4, 1, 4, 1, 3});
    CHECK(c.held_out == std::vector<std::uint8_t>{2});
    // with 256 characters past U+FFFF, the least frequent (the last, once) is unknown
    std::string text;
    for (std::uint32_t k = 0; k < 256; ++k)
        for (std::uint32_t n = 0; n < 2 + (k < 255); ++n) text += mha::utf8_encode(0x10000 + k);
    const mha::Corpus many = mha::read_corpus(text, "test");
    REQUIRE(many.vocab.size() == 256);
    CHECK(many.vocab.back() == 0x100FE);
    CHECK(many.held_out.back() == 0);
    CHECK(many.held_out_characters.back() == mha::utf8_encode(0x100FF));
}

TEST_CASE("the batch of a step is a pure function of (seed, step), as train.py makes it",
          "[train]") {
    const mha::Corpus& c = shipped();
    const std::size_t B = 32, N = 128;
    const mha::Batch a = mha::training_batch(c, 0, 7, B, N);
    const mha::Batch again = mha::training_batch(c, 0, 7, B, N);
    CHECK(a.tokens == again.tokens);
    CHECK(a.targets == again.targets);
    CHECK(mha::training_batch(c, 0, 8, B, N).tokens != a.tokens);
    CHECK(mha::training_batch(c, 1, 7, B, N).tokens != a.tokens);
    REQUIRE(a.tokens.size() == B * N);
    REQUIRE(a.targets.size() == B * N);
    const std::vector<std::size_t> letters = mha::letter_tokens(c);
    std::size_t unknown = 0;
    for (std::size_t r = 0; r < B; ++r) {
        const std::size_t* x = &a.tokens[r * N];
        const std::size_t* y = &a.targets[r * N];
        // targets are the inputs shifted by one (where no noise replaced the input)
        for (std::size_t i = 0; i + 1 < N; ++i)
            if (x[i + 1] != mha::unknown_token) CHECK(y[i] == x[i + 1]);
        unknown += std::size_t(std::count(x, x + N, mha::unknown_token));
        // round(0.3 · 32) = 10 rows end in a segment of 8-32 lowercase letters repeated: the
        // last target repeats with a period of 8 to 32 over at least two periods
        const bool letters_only = std::all_of(y + N - 16, y + N, [&](std::size_t t) {
            return std::find(letters.begin(), letters.end(), t) != letters.end();
        });
        std::size_t period = 0;
        for (std::size_t p = 8; p <= 32 && !period; ++p) {
            bool repeats = true;
            for (std::size_t i = N - 2 * p; i + p < N && repeats; ++i) repeats = y[i] == y[i + p];
            if (repeats) period = p;
        }
        CAPTURE(r);
        if (r < 10) CHECK((letters_only && period != 0));
    }
    // 0.5% of 4,096 inputs: about 20; the shipped corpus has no unknown character itself
    CHECK(unknown > 5);
    CHECK(unknown < 50);
    const mha::Batch held = mha::held_out_batch(c, 0, 4, N);
    CHECK(held.tokens == mha::held_out_batch(c, 0, 4, N).tokens);
    for (std::size_t i = 0; i + 1 < held.tokens.size(); ++i)
        if ((i + 1) % N != 0) CHECK(held.targets[i] == held.tokens[i + 1]);
}

TEST_CASE("the initial model: PyTorch's defaults, every parameter in its own memory", "[train]") {
    mha::ModelSizes sizes;  // kjv-2x4's
    mha::Model m = mha::seeded_model(shipped().vocab, sizes, 0);
    // kjv-2x4's 116,415 with V 63; here V 62: one token's 64 + 64 + 1 fewer
    CHECK(m.parameter_count() == 116286);
    const auto stats = [](const mha::Tensor& t) {
        double sum = 0, squares = 0, largest = 0;
        for (const float v : t.to_vector()) {
            sum += v;
            squares += double(v) * v;
            largest = std::max(largest, double(std::fabs(v)));
        }
        const double n = double(t.numel());
        return std::array<double, 3>{sum / n, std::sqrt(squares / n - (sum / n) * (sum / n)),
                                     largest};
    };
    CHECK(stats(m.token_embedding)[1] == Approx(0.02).epsilon(0.05));
    CHECK(stats(m.position_embedding)[1] == Approx(0.2).epsilon(0.05));
    // in_proj: Xavier-uniform over (3·64, 64): bound √(6 / 256) ≈ 0.153, std bound/√3
    const double xavier = std::sqrt(6.0 / 256.0);
    CHECK(stats(m.layers[0].attention.w_q)[2] <= xavier);
    CHECK(stats(m.layers[0].attention.w_v)[1] == Approx(xavier / std::sqrt(3.0)).epsilon(0.05));
    // nn.Linear: U(±1/√fan_in): linear2 reads 256 features
    CHECK(stats(m.layers[1].block.w_2)[2] <= 1.0 / 16.0);
    CHECK(stats(m.layers[1].block.w_2)[2] > 0.9 / 16.0);
    CHECK(stats(m.layers[0].attention.b_q)[2] == 0.0);
    CHECK(stats(m.layers[0].attention.b_o)[2] == 0.0);
    CHECK(m.layers[0].block.norm1_weight.to_vector() == std::vector<float>(64, 1.0f));
    // the same seed, the same bits; another seed, other values
    CHECK(mha::seeded_model(shipped().vocab, sizes, 0).head_weight.to_vector() ==
          m.head_weight.to_vector());
    CHECK(mha::seeded_model(shipped().vocab, sizes, 1).head_weight.to_vector() !=
          m.head_weight.to_vector());
    // an update to one parameter leaves every other as it was (no shared values)
    std::vector<std::vector<float>> before;
    for (const auto& array : mha::model_arrays(m, "")) before.push_back(array.second.to_vector());
    m.layers[0].block.norm1_weight.data()[0] = 5.0f;
    const auto after = mha::model_arrays(m, "");
    std::size_t changed = 0;
    for (std::size_t i = 0; i < before.size(); ++i)
        changed += before[i] != after[i].second.to_vector();
    CHECK(changed == 1);
}

TEST_CASE("a default-sized model: two steps give the same bits at 1 and 2 threads", "[train]") {
    const mha::Corpus& c = shipped();
    const mha::Batch batch = mha::training_batch(c, 0, 0, 4, 128);
    mha::TrainRecipe recipe;
    mha::TrainState one = mha::start_training(mha::seeded_model(c.vocab, {}, 0));
    mha::TrainState two = mha::start_training(mha::seeded_model(c.vocab, {}, 0));
    for (int s = 0; s < 2; ++s) {
        CHECK(mha::train_step(one, batch.tokens, batch.targets, 4, recipe, 1).loss ==
              mha::train_step(two, batch.tokens, batch.targets, 4, recipe, 2).loss);
    }
    const auto a = mha::model_arrays(one.model, ""), b = mha::model_arrays(two.model, "");
    for (std::size_t i = 0; i < a.size(); ++i) {
        CAPTURE(a[i].first);
        CHECK(a[i].second.to_vector() == b[i].second.to_vector());
    }
}

namespace {

// FNV-1a over every parameter's float32 bytes, in the file's order.
std::uint64_t parameter_digest(const mha::Model& model) {
    std::uint64_t h = 14695981039346656037ull;
    for (const auto& [name, tensor] : mha::model_arrays(model, "")) {
        const std::vector<float> values = tensor.to_vector();
        const auto* bytes = reinterpret_cast<const unsigned char*>(values.data());
        for (std::size_t i = 0; i < values.size() * sizeof(float); ++i)
            h = (h ^ bytes[i]) * 1099511628211ull;
    }
    return h;
}

}  // namespace

// The digest below was computed by the g++ build; make test-clang checks that clang++ gives the
// same bits (both compile with -ffp-contract=off, and every kernel variant sums alike).
TEST_CASE("a seed's training is pinned to the bit: the same digest with g++ and clang++",
          "[train]") {
    const mha::Corpus& c = shipped();
    // the batch of 4 rows of 32 in one micro-batch, and in two of 2 rows
    const auto [micro_batch, digest] = GENERATE(table<std::size_t, std::uint64_t>(
        {{512, 0x082373f2eea4e337ull}, {64, 0x7741a54d153873b5ull}}));
    CAPTURE(micro_batch);
    mha::TrainState state =
        mha::start_training(mha::seeded_model(c.vocab, {2, 16, 2, 32, 32}, 7));
    mha::TrainRecipe recipe;
    recipe.micro_batch = micro_batch;
    for (std::uint64_t step = 0; step < 3; ++step) {
        const mha::Batch batch = mha::training_batch(c, 7, step, 4, 32);
        mha::train_step(state, batch.tokens, batch.targets, 4, recipe, 2);
    }
    CHECK(parameter_digest(state.model) == digest);
}

TEST_CASE("a checkpoint saved and loaded goes on bit for bit", "[train]") {
    const mha::Corpus& c = shipped();
    mha::TrainSettings settings;
    settings.sizes = {2, 16, 2, 32, 16};
    settings.batch = 4;
    settings.recipe.steps = 8;
    settings.recipe.warmup = 2;
    const auto steps = [&](mha::TrainState& state, std::uint64_t until) {
        while (state.step < until) {
            const mha::Batch b = mha::training_batch(c, 0, state.step, 4, 16);
            mha::train_step(state, b.tokens, b.targets, 4, settings.recipe, 2);
        }
    };
    mha::TrainState straight = mha::start_training(mha::seeded_model(c.vocab, settings.sizes, 0));
    steps(straight, 8);
    mha::Checkpoint half;
    half.settings = settings;
    half.state = mha::start_training(mha::seeded_model(c.vocab, settings.sizes, 0));
    steps(half.state, 4);
    half.step_losses = {1.0, 2.0, 3.0, 4.0};
    half.eval_every = 3;
    mha::TrainEvaluation e;
    e.step = 4;
    e.seconds = 1.5;
    e.loss = 2.5;
    e.val_loss = 2.25;
    e.prev_token = {{0.1, 0.2}, {0.3, 0.4}};
    e.induction = {{0.5, 0.6}, {0.7, 0.8}};
    half.history = {e};
    const std::string path = test::temp_path("half.npz");
    mha::save_checkpoint(path, half);
    mha::Checkpoint loaded = mha::load_checkpoint(path, std::uint64_t(1) << 30);
    CHECK(loaded.state.step == 4);
    CHECK(loaded.step_losses == half.step_losses);
    REQUIRE(loaded.history.size() == 1);
    CHECK(loaded.history[0].induction == e.induction);
    CHECK(loaded.history[0].prev_token == e.prev_token);
    CHECK(loaded.history[0].val_loss == e.val_loss);
    CHECK(loaded.settings.recipe.lr == settings.recipe.lr);
    CHECK(loaded.eval_every == 3);
    steps(loaded.state, 8);
    const auto a = mha::model_arrays(straight.model, "");
    const auto b = mha::model_arrays(loaded.state.model, "");
    for (std::size_t i = 0; i < a.size(); ++i) {
        CAPTURE(a[i].first);
        CHECK(a[i].second.to_vector() == b[i].second.to_vector());
        CHECK(straight.moments[i].v.to_vector() == loaded.state.moments[i].v.to_vector());
    }
    // mha --model reads the checkpoint as a model (the train.* arrays left to the trainer)
    CHECK(mha::load_model(path, std::uint64_t(1) << 30).context() == 16);
    fs::remove(path);
}

TEST_CASE("mha train: stopped at --time-limit and resumed, the same bytes as straight through",
          "[train]") {
    const fs::path dir = test::temp_path("train-resume");
    fs::remove_all(dir);
    fs::create_directories(dir);
    // 300 tiny steps take about 0.2 s in the g++ build (far longer under ASan): --time-limit
    // 0.05 stops the second run part way, at a step that depends on the machine
    const std::string run = test::mha_binary() + " train " + small_sizes + " --steps 300 " +
                            "--eval-every 100 --threads 2 --out ";
    const std::string straight = (dir / "straight.npz").string();
    const std::string parts = (dir / "parts.npz").string();
    const std::string log = (dir / "log.jsonl").string();
    REQUIRE(test::run_command(run + straight + " 2>&1").status == 0);
    const test::RunResult first =
        test::run_command(run + parts + " --time-limit 0.05 --log " + log + " 2>&1");
    REQUIRE(first.status == 0);
    INFO(first.output);
    CHECK(first.output.find("mha: --time-limit 0.05 s reached at step ") != std::string::npos);
    const test::RunResult second =
        test::run_command(run + parts + " --resume " + parts + " --log " + log + " 2>&1");
    REQUIRE(second.status == 0);
    CHECK(second.output.find("mha: trained 300 steps") != std::string::npos);
    // every array of the model, of AdamW's state and of the evaluations: the same bytes, but
    // the clock (the seconds, and the history's second column; the NaN loss of step 0 made -1
    // to compare equal)
    const std::vector<std::string> clock = {"train.seconds"};
    auto a = arrays_without(straight, clock), b = arrays_without(parts, clock);
    for (auto* arrays : {&a, &b}) {
        std::vector<double>& history = arrays->at("train.history").values;
        for (std::size_t row = 0; row < history.size() / 4; ++row) history[4 * row + 1] = 0;
        for (double& value : history) value = std::isnan(value) ? -1 : value;
    }
    REQUIRE(a.size() == b.size());
    for (const auto& [name, array] : a) {
        CAPTURE(name);
        REQUIRE(b.count(name) == 1);
        CHECK(b.at(name).values == array.values);
    }
    // the log: one line per evaluation, each with the fields the panel and the docs name
    std::istringstream lines(test::read_text(log));
    std::size_t count = 0;
    for (std::string line; std::getline(lines, line); ++count) {
        for (const char* field : {"\"step\":", "\"seconds\":", "\"loss\":", "\"val_loss\":",
                                  "\"prev_token\":[[", "\"induction\":[["})
            CHECK(line.find(field) != std::string::npos);
    }
    CHECK(count == 4);  // steps 0, 100, 200, 300: the resumed run appends (even to a log whose
                        // run stopped at step 0), and evaluates no more than a run never stopped
    CHECK(test::run_mha("--model " + parts + " --text 'In the beginning' --summary").status == 0);
    fs::remove_all(dir);
}

TEST_CASE("mha train: Ctrl-C saves the checkpoint and exits with 130", "[train]") {
    const fs::path dir = test::temp_path("train-interrupt");
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string out = (dir / "m.npz").string(), said = (dir / "said.txt").string();
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        const std::string command = "exec " + test::mha_binary() + " train " + small_sizes +
                                    " --steps 100000 --out " + out + " >" + said + " 2>&1";
        execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
        _exit(127);
    }
    // wait for the first evaluation's line: the loop is running
    for (int i = 0; i < 200 && text_so_far(said).find("step 0/") == std::string::npos; ++i)
        usleep(50000);
    kill(child, SIGINT);
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 130);
    const std::string text = test::read_text(said);
    CHECK(text.find("mha: interrupted at step ") != std::string::npos);
    CHECK(text.find("the checkpoint is in " + out) != std::string::npos);
    CHECK(mha::load_checkpoint(out, std::uint64_t(1) << 30).state.step > 0);
    fs::remove_all(dir);
}

TEST_CASE("mha train: a checkpoint that cannot be written keeps the old one", "[train]") {
    const fs::path dir = test::temp_path("train-full");
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string out = (dir / "m.npz").string();
    const std::string run =
        test::mha_binary() + " train " + small_sizes + " --steps 2 --out " + out;
    REQUIRE(test::run_command(run + " >/dev/null 2>&1").status == 0);
    const std::string before = test::read_text(out);
    // 20 KiB: the file is about 110 KiB
    const test::RunResult r =
        test::run_command("ulimit -f 20; " + run + " --seed 1 2>&1 >/dev/null");
    CHECK(r.status == 2);
    CHECK(r.output == "mha: error: cannot write " + out + ": File too large\n");
    CHECK(test::read_text(out) == before);
    std::size_t files = 0;
    for (const auto& entry : fs::directory_iterator(dir)) files += entry.is_regular_file();
    CHECK(files == 1);  // no temporary file left
    fs::remove_all(dir);
}

TEST_CASE("mha train: a diverging run stops with the step and where NaN or inf appeared",
          "[train]") {
    const fs::path dir = test::temp_path("train-diverge");
    fs::remove_all(dir);
    fs::create_directories(dir);
    const test::RunResult r = test::run_command(
        test::mha_binary() + " train --context 16 --batch 2 -d 8 -H 2 --d-ff 16 --steps 50 " +
        "--lr 1e8 --out " + (dir / "m.npz").string() + " 2>&1 >/dev/null");
    CHECK(r.status == 1);
    CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
    CHECK(r.output.rfind("mha: training diverged at step ", 0) == 0);
    CHECK(r.output.find("first appears in the ") != std::string::npos);
    // before step 250 no checkpoint was written, and the line names none
    CHECK_THAT(r.output, Catch::EndsWith("; no checkpoint was written (a smaller --lr?)\n"));
    CHECK_FALSE(fs::exists(dir / "m.npz"));
    // weights that overflow first in the evaluation after the step: the same kind of line
    const test::RunResult e = test::run_command(
        test::mha_binary() + " train --context 16 --batch 4 -d 16 -H 2 --d-ff 32 --layers 1 " +
        "--steps 6 --eval-every 1 --lr 1e9 --out " + (dir / "m.npz").string() +
        " 2>&1 >/dev/null");
    INFO(e.output);
    CHECK(e.status == 1);
    CHECK(std::count(e.output.begin(), e.output.end(), '\n') == 1);
    CHECK(e.output.rfind("mha: training diverged at step ", 0) == 0);
    fs::remove_all(dir);
}

TEST_CASE("mha train runs from any folder: its corpus is built in", "[train]") {
    const std::string out = test::temp_path("anywhere.npz");
    const test::RunResult r =
        test::run_command("cd / && " + fs::canonical(test::mha_binary()).string() + " train " +
                          small_sizes + " --steps 1 --out " + out + " 2>&1");
    INFO(r.output);
    CHECK(r.status == 0);
    CHECK(mha::load_checkpoint(out, std::uint64_t(1) << 30).corpus_characters == 1572796);
    fs::remove(out);
}

TEST_CASE("mha train --save-batches writes every step's batch", "[train]") {
    const fs::path dir = test::temp_path("train-batches");
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string batches = (dir / "b.npz").string();
    REQUIRE(test::run_command(test::mha_binary() + " train " + small_sizes +
                              " --steps 3 --seed 5 " + "--out " + (dir / "m.npz").string() +
                              " --save-batches " + batches + " >/dev/null 2>&1")
                .status == 0);
    const auto arrays = mha::npy::read_npz(batches);
    const mha::npy::Array& inputs = arrays.at("inputs");
    CHECK(inputs.dtype_name() == "int32");
    REQUIRE(inputs.shape == mha::Shape{3, 4, 16});
    for (std::size_t s = 0; s < 3; ++s) {
        const mha::Batch b = mha::training_batch(shipped(), 5, s, 4, 16);
        CHECK(std::equal(b.tokens.begin(), b.tokens.end(), inputs.values.begin() + s * 64));
        CHECK(std::equal(b.targets.begin(), b.targets.end(),
                         arrays.at("targets").values.begin() + s * 64));
    }
    fs::remove_all(dir);
}

TEST_CASE("TERM unset or dumb: plain lines on a terminal too, as with NO_COLOR") {
    const std::string train = test::mha_binary() +
                              " train --steps 2 --eval-every 1 --context 8 --batch 2 -d 16 -H 2"
                              " --layers 1 --d-ff 16 --out " +
                              test::temp_path("dumb-term.npz");
    for (const char* term : {"TERM=xterm", "TERM=dumb", "env -u TERM"}) {
        // script(1) gives the run a real terminal on stdout
        const test::RunResult run =
            test::run_command(std::string(term) + " NO_COLOR= script -qec '" + train + "' /dev/null");
        CHECK(run.status == 0);
        const bool panel = run.output.find("\x1b[?1049h") != std::string::npos;
        CHECK(panel == (std::string(term) == "TERM=xterm"));
    }
}

TEST_CASE("no file is named by two of mha train's options, but --resume F --out F") {
    const fs::path dir = test::temp_path("train-same-file");
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string corpus = (dir / "corpus.txt").string();
    const std::string out = (dir / "m.npz").string();
    const std::string tiny = " --steps 2 --eval-every 1 --context 8 --batch 2 -d 16 -H 2 --layers 1"
                             " --d-ff 16";
    {
        std::ofstream(corpus) << std::string(4000, 'a') + "the quick brown fox jumps over it\n";
    }
    REQUIRE(test::run_mha("train --corpus " + corpus + " --out " + out + tiny).status == 0);
    const std::string corpus_text = test::read_text(corpus);
    fs::create_symlink(corpus, dir / "link.txt");
    const std::string link = (dir / "link.txt").string();
    const std::string fresh = (dir / "new.log").string();
    const auto [args, first, second] = GENERATE_COPY(table<std::string, std::string, std::string>({
        {"--corpus " + corpus + " --out " + corpus, "--corpus", "--out"},
        {"--corpus " + corpus + " --log " + link, "--corpus", "--log"},  // through a link
        {"--resume " + out + " --log " + out, "--resume", "--log"},
        {"--resume " + out + " --save-batches " + out, "--resume", "--save-batches"},
        {"--out " + fresh + " --save-batches " + dir.string() + "/./new.log", "--out",
         "--save-batches"},  // a file not yet made, named two ways
        {"--out " + out + " --log " + out + " --corpus " + corpus, "--out", "--log"},
    }));
    test::check_rejected("train " + args + tiny,
                         first + " and " + second + " name the same file; the run would "
                         "overwrite it: give " + second + " another name");
    CHECK(test::read_text(corpus) == corpus_text);
    CHECK_FALSE(fs::exists(fresh));
    // the one exception: go on in place
    CHECK(test::run_mha("train --resume " + out + " --out " + out + " --corpus " + corpus).status ==
          0);
}

namespace {

// The arrays written as an .npz at `path`, float32 arrays as tensors.
void write_arrays(const std::string& path, const std::map<std::string, mha::npy::Array>& arrays) {
    std::vector<std::pair<std::string, mha::Tensor>> floats;
    std::vector<std::pair<std::string, mha::npy::Array>> others;
    for (const auto& [key, array] : arrays) {
        if (array.kind == 'f' && array.item_size == 4)
            floats.emplace_back(key, mha::npy::to_tensor(array));
        else
            others.emplace_back(key, array);
    }
    mha::npy::write_npz(path, floats, others);
}

// `path` written again with one value of array `name` replaced.
void damage(const std::string& path, const std::string& name, std::size_t index, double value) {
    std::map<std::string, mha::npy::Array> arrays = mha::npy::read_npz(path);
    REQUIRE(arrays.count(name) == 1);
    arrays.at(name).values.at(index) = value;
    write_arrays(path, arrays);
}

}  // namespace

TEST_CASE("--resume refuses a checkpoint holding values mha train cannot have written") {
    const fs::path dir = test::temp_path("train-damaged");
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string corpus = (dir / "corpus.txt").string(), good = (dir / "good.npz").string();
    {
        std::ofstream(corpus) << std::string(3000, 'a') + "the quick brown fox jumps over it\n";
    }
    REQUIRE(test::run_mha("train --corpus " + corpus + " --out " + good +
                          " --steps 2 --eval-every 1 --context 8 --batch 2 -d 16 -H 2"
                          " --layers 1 --d-ff 16")
                .status == 0);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const auto [name, index, value, message] =
        GENERATE_COPY(table<std::string, std::size_t, double, std::string>({
            {"train.recipe", 0, -0.003,
             "train.recipe[0] (--lr) holds -0.003; mha train writes a positive rate"},
            {"train.recipe", 1, nan, "train.recipe[1] (clip) holds nan; mha train writes a positive"},
            {"train.sizes", 6, 4611686018427387904.0,
             "train.sizes[6] (--steps) holds 4.61169e+18; mha train writes the bounds its options"},
            {"train.seconds", 0, nan, "train.seconds holds nan; mha train writes the seconds"},
            {"train.seconds", 0, 1e300, "train.seconds holds 1e+300; mha train writes the seconds"},
            {"train.history", 4, nan, "train.history holds nan; mha train writes the steps evaluated"},
            {"vocab", 5, 0x3b1, "its vocab array holds other characters than the corpus it was"},
            {"train.eval_every", 0, 0, "train.eval_every holds 0; mha train writes 1 to --steps"},
            {"train.sizes", 4, 1, "train.sizes[4] (--context) holds 1; mha train writes the bounds"},
        }));
    const std::string bad = (dir / "bad.npz").string();
    fs::copy_file(good, bad, fs::copy_options::overwrite_existing);
    damage(bad, name, index, value);
    test::check_rejected("train --resume " + bad + " --out " + (dir / "next.npz").string() +
                             " --corpus " + corpus,
                         message);
    CHECK_FALSE(fs::exists(dir / "next.npz"));
}

TEST_CASE("the closing line counts one step as one step") {
    const test::RunResult run = test::run_mha(
        "train --steps 1 --eval-every 1 --context 8 --batch 2 -d 16 -H 2 --layers 1 --d-ff 16"
        " --out " + test::temp_path("one-step.npz"));
    CHECK(run.status == 0);
    CHECK_THAT(run.output, Catch::Contains("mha: trained 1 step in "));
}

namespace {

// A fresh folder `dir` holding start.npz: a tiny run evaluated at every step, stopped at step
// 2 of `steps` (trained for 2, its train.sizes[6] made `steps`). Returns its path.
std::string stopped_checkpoint(const fs::path& dir, double steps) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string start = (dir / "start.npz").string();
    const std::string run = "train --steps 2 --eval-every 1 --context 8 --batch 2 -d 16 -H 2"
                            " --layers 1 --d-ff 16 --out ";
    REQUIRE(test::run_mha(run + start).status == 0);
    damage(start, "train.sizes", 6, steps);
    return start;
}

}  // namespace

TEST_CASE("a resumed run that diverges names the checkpoint it resumed from, and its step",
          "[train]") {
    const fs::path dir = test::temp_path("train-diverge-resumed");
    const std::string start = stopped_checkpoint(dir, 20), out = (dir / "m.npz").string();
    damage(start, "train.recipe", 0, 1e30);  // the run goes on at a rate that diverges at once
    const test::RunResult r = test::run_command(test::mha_binary() + " train --resume " + start +
                                                " --out " + out + " 2>&1 >/dev/null");
    CHECK(r.status == 1);
    CHECK_THAT(
        r.output,
        Catch::StartsWith("mha: training diverged at step ") &&
            Catch::EndsWith("; " + start + " keeps the checkpoint of step 2 (a smaller --lr?)\n"));
    CHECK_FALSE(fs::exists(out));
    fs::remove_all(dir);
}

TEST_CASE("--resume evaluates every --eval-every steps of the checkpoint, unless given another",
          "[train]") {
    const fs::path dir = test::temp_path("train-eval-every");
    const std::string start = stopped_checkpoint(dir, 8), out = (dir / "m.npz").string();
    const auto steps_evaluated = [&](const std::string& options) {
        fs::copy_file(start, out, fs::copy_options::overwrite_existing);
        REQUIRE(test::run_mha("train --resume " + out + " --out " + out + options).status == 0);
        const mha::Checkpoint c = mha::load_checkpoint(out, std::uint64_t(1) << 30);
        std::vector<std::size_t> steps;
        for (const mha::TrainEvaluation& e : c.history) steps.push_back(e.step);
        return std::make_pair(steps, c.eval_every);
    };
    // the checkpoint's --eval-every 1 goes on
    CHECK(steps_evaluated("") ==
          std::make_pair(std::vector<std::size_t>{0, 1, 2, 3, 4, 5, 6, 7, 8}, std::uint64_t(1)));
    // another, given, is taken and saved: it moves only the evaluations, never the weights
    CHECK(steps_evaluated(" --eval-every 3") ==
          std::make_pair(std::vector<std::size_t>{0, 1, 2, 3, 6, 8}, std::uint64_t(3)));
    // a checkpoint of an older mha, without train.eval_every: the default 50 (here: the end)
    std::map<std::string, mha::npy::Array> arrays = mha::npy::read_npz(start);
    arrays.erase("train.eval_every");
    write_arrays(start, arrays);
    CHECK(steps_evaluated("") ==
          std::make_pair(std::vector<std::size_t>{0, 1, 2, 8}, std::uint64_t(8)));
    fs::remove_all(dir);
}

}  // namespace test_train
