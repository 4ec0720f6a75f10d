// The trained character model (examples/models/kjv-2x4.npz): parity with the training
// script's own forward (tests/data/model/*.npz, written by examples/models/train.py),
// the text encoding, the head-role scores by hand, the targets the model was trained for,
// and the loader's errors.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <sstream>

#include "core/backward/model_backward.h"
#include "core/error.h"
#include "core/forms/model.h"
#include "helpers.h"
#include "io/model_file.h"
#include "show/format.h"
#include "show/head_roles.h"
#include "xml_checker.h"

namespace test_model {

using mha::Tensor;

namespace {

constexpr double logit_tolerance = 1e-4;
constexpr double weight_tolerance = 1e-5;
const std::string model_path = "../examples/models/kjv-2x4.npz";

const mha::Model& model() {
    static const mha::Model m = mha::load_model(model_path, std::uint64_t(1) << 30);
    return m;
}

std::string utf8(std::uint32_t code) {
    std::string s;
    if (code < 0x80) return std::string(1, char(code));
    if (code < 0x800) return s + char(0xC0 | (code >> 6)) + char(0x80 | (code & 0x3F));
    return s + char(0xE0 | (code >> 12)) + char(0x80 | ((code >> 6) & 0x3F)) +
           char(0x80 | (code & 0x3F));
}

// The fixture's text, stored as code points.
std::string fixture_text(const mha::npy::Array& codes) {
    std::string text;
    for (double c : codes.values) text += utf8(std::uint32_t(c));
    return text;
}

std::vector<mha::HeadRoles> roles_of(const std::string& text, std::size_t layer) {
    const mha::ModelText encoded = mha::encode_text(text, model());
    mha::NullTracer quiet;
    const mha::ModelResult r = mha::forward_model(model(), encoded.tokens, 0, 1, quiet);
    return mha::head_roles(r.weights[layer], encoded.characters);
}

}  // namespace

TEST_CASE("the model's logits and every layer's weights match the training script's forward",
          "[model]") {
    const std::string name = GENERATE(as<std::string>{}, "prose", "induction", "unknown");
    CAPTURE(name);
    const auto fixture = mha::npy::read_npz("data/model/" + name + ".npz");
    const mha::ModelText text = mha::encode_text(fixture_text(fixture.at("text")), model());
    mha::NullTracer quiet;
    const mha::ModelResult r = mha::forward_model(model(), text.tokens, 0, 2, quiet);
    test::require_close(r.logits, mha::npy::to_tensor(fixture.at("logits")), logit_tolerance);
    REQUIRE(r.weights.size() == model().layers.size());
    for (std::size_t l = 0; l < r.weights.size(); ++l) {
        CAPTURE(l);
        test::require_close(r.weights[l],
                            mha::npy::to_tensor(fixture.at("attn_weights." + std::to_string(l))),
                            weight_tolerance);
    }
}

TEST_CASE("text becomes one token per character; others are the unknown token 0", "[model]") {
    const mha::ModelText t = mha::encode_text("Am\xC3\xA9n 7\xFF", model());
    // 'A' 'm' 'é' 'n' ' ' '7' and the stray byte 0xFF: é, 7 and 0xFF are not in the KJV's
    // characters, so three unknown tokens.
    REQUIRE(t.tokens.size() == 7);
    CHECK(t.characters[2] == "\xC3\xA9");
    CHECK(t.unknown == 3);
    CHECK(t.tokens[2] == mha::unknown_token);
    CHECK(t.tokens[5] == mha::unknown_token);
    CHECK(t.tokens[6] == mha::unknown_token);
    CHECK(model().vocab[t.tokens[0]] == 'A');
    CHECK(model().vocab[t.tokens[4]] == ' ');
    REQUIRE_THROWS_WITH(mha::encode_text(std::string(model().context() + 1, 'a'), model()),
                        "--text has " + std::to_string(model().context() + 1) +
                            " characters; the model's context is " +
                            std::to_string(model().context()));
}

TEST_CASE("head roles by hand", "[model]") {
    // Text "abab", one head, causal weights:
    //   query 0: [1]            query 1: [0.5 0.5]
    //   query 2: [0.2 0.8 0]    query 3: [0.1 0.2 0.3 0.4]
    // previous: (w[1][0] + w[2][1] + w[3][2]) / 3 = (0.5 + 0.8 + 0.3) / 3 = 0.5333
    // first:    (0.5 + 0.2 + 0.1) / 3 = 0.2667
    // same:     query 2 ('a', earlier at 0): 0.2; query 3 ('b', earlier at 1): 0.2 -> 0.2
    // induction: query 3's last two "ab" occurred at (0, 1), so key 2: 0.3; query 2's "ba"
    //            did not occur before -> 0.3 over one query
    const Tensor w({1, 1, 4, 4},
                   {1, 0, 0, 0, 0.5f, 0.5f, 0, 0, 0.2f, 0.8f, 0, 0, 0.1f, 0.2f, 0.3f, 0.4f});
    const std::vector<mha::HeadRoles> r = mha::head_roles(w, {"a", "b", "a", "b"});
    REQUIRE(r.size() == 1);
    CHECK(r[0].previous == Approx(1.6 / 3).margin(1e-6));
    CHECK(r[0].first == Approx(0.8 / 3).margin(1e-6));
    CHECK(r[0].same == Approx(0.2).margin(1e-6));
    CHECK(r[0].induction == Approx(0.3).margin(1e-6));
    CHECK(std::isnan(mha::head_roles(w, {"a", "b", "c", "d"})[0].induction));
    // Characters outside the vocabulary share the unknown token but are not the same
    // character: "€", "£", "€", "¥" repeats only the first, so query 3 has no earlier copy
    // and query 2 has one, at key 0 (weight 0.2); no query qualifies for induction.
    const std::vector<mha::HeadRoles> unknown = mha::head_roles(w, {"€", "£", "€", "¥"});
    CHECK(unknown[0].same == Approx(0.2).margin(1e-6));
    CHECK(std::isnan(unknown[0].induction));
}

TEST_CASE("the model has the heads it was trained for", "[model]") {
    // Layer 0: a head with mean weight >= 0.5 on the previous character over ordinary prose
    // (Psalm 23:1-3, not in the held-out text the training script measured on).
    const std::string prose =
        "The LORD is my shepherd; I shall not want. He maketh me to lie down in green "
        "pastures: he leadeth me beside the still waters.";
    double previous = 0.0;
    for (const mha::HeadRoles& r : roles_of(prose, 0)) previous = std::max(previous, r.previous);
    CHECK(previous >= 0.5);
    // A later layer: a head with mean weight >= 0.3 on the character after the previous
    // occurrence, over random 24-letter lowercase segments written twice.
    std::mt19937 random(2026);
    const std::size_t samples = 8;
    std::vector<double> induction(model().layers[1].heads, 0.0);
    for (std::size_t s = 0; s < samples; ++s) {
        std::string segment;
        for (int i = 0; i < 24; ++i) segment += char('a' + random() % 26);
        const std::vector<mha::HeadRoles> roles = roles_of(segment + segment, 1);
        for (std::size_t h = 0; h < roles.size(); ++h) induction[h] += roles[h].induction / samples;
    }
    CHECK(*std::max_element(induction.begin(), induction.end()) >= 0.3);
}

TEST_CASE(
    "mha --model: --save holds the chosen layer's weights and the logits, as the "
    "training script computed them",
    "[model][cli]") {
    const auto fixture = mha::npy::read_npz("data/model/induction.npz");
    const std::string text = fixture_text(fixture.at("text"));
    const std::string out = test::temp_path("model-save.npz");
    const test::RunResult r =
        test::run_mha("--model " + model_path + " --text '" + text + "' --layer 1 --save " + out);
    INFO(r.output);
    REQUIRE(r.status == 0);
    CHECK_THAT(r.output, Catch::Contains("next character: "));
    const auto saved = mha::npy::read_npz(out);
    test::require_close(mha::npy::to_tensor(saved.at("attn_weights")),
                        mha::npy::to_tensor(fixture.at("attn_weights.1")), weight_tolerance);
    test::require_close(mha::npy::to_tensor(saved.at("logits")),
                        mha::npy::to_tensor(fixture.at("logits")), logit_tolerance);
    std::remove(out.c_str());
}

TEST_CASE("mha --model: unknown characters are said once on stderr; views of every layer",
          "[model][cli]") {
    const test::RunResult warned = test::run_command(test::mha_binary() + " --model " + model_path +
                                                     " --text 'Psalm 23: 1 and 2' 2>&1 >/dev/null");
    CHECK(warned.status == 0);
    CHECK(warned.output ==
          "mha: warning: 4 characters of --text are not in the model's vocabulary; read as the "
          "unknown token 0\n");
    const test::RunResult all =
        test::run_mha("--model " + model_path + " --text 'In the beginning' --heatmap --summary");
    REQUIRE(all.status == 0);
    CHECK_THAT(all.output, Catch::Contains("layer 0 head 0") && Catch::Contains("layer 1 head 3") &&
                               Catch::Contains("induction") && Catch::Contains("strongest"));
    const test::RunResult one =
        test::run_mha("--model " + model_path + " --text 'In the beginning' --layer 1 --trace");
    REQUIRE(one.status == 0);
    CHECK_THAT(one.output, Catch::Contains("layer 1 of 2") && Catch::Contains("embed") &&
                               Catch::Contains("logits = x_final @ lm_head.T + b"));
}

TEST_CASE(
    "mha --model at 80 columns: no line wider, the single map not cut; --head picks "
    "heads of every layer",
    "[model][cli]") {
    // 44 characters: the README's old example, whose model view wrapped three lines mid-word
    // and whose single-head map was cut to keys 0..36
    const std::string text = "'Amen, the grace of our Lord; Amen, the grace'";
    const auto widest = [](const std::string& output) {
        std::size_t widest_line = 0;
        std::istringstream lines(output);
        for (std::string line; std::getline(lines, line);) {
            // columns: UTF-8 continuation bytes take none (the labels' visible space is one)
            const std::size_t columns = std::size_t(
                std::count_if(line.begin(), line.end(), [](char c) { return (c & 0xC0) != 0x80; }));
            widest_line = std::max(widest_line, columns);
        }
        return widest_line;
    };
    for (const std::string view : {" --heatmap", " --layer 1 --head 0 --heatmap"}) {
        CAPTURE(view);
        const test::RunResult r =
            test::run_command("COLUMNS=80 " + test::mha_binary() + " --model " + model_path +
                              " --text " + text + view);
        REQUIRE(r.status == 0);
        CHECK(widest(r.output) <= 80);
        CHECK_THAT(r.output, !Catch::Contains("cut to fit"));
    }
    // --head 2 --head 0 without --layer: those two heads of each layer, side by side, in order
    const test::RunResult two =
        test::run_command("COLUMNS=80 " + test::mha_binary() + " --model " + model_path +
                          " --text 'qxvbtmrk qxvbtm' --heatmap --head 2 --head 0");
    REQUIRE(two.status == 0);
    CHECK_THAT(two.output,
               Catch::Contains("heads 2, 0 of every layer (rows: queries, columns: keys)\n") &&
                   Catch::Contains("      layer 0 head 2    layer 0 head 0    layer 1 head 2    "
                                   "layer 1 head 0\n"));
    CHECK_THAT(two.output,
               !Catch::Contains("layer 0 head 1") && !Catch::Contains("layer 1 head 3 "));
}

TEST_CASE(
    "mha --model --format html: a lesson page with the traced layer's steps, every "
    "layer's heads, the prediction and the head roles",
    "[model][html]") {
    const std::string path = test::temp_path("model-page.html");
    const test::RunResult r =
        test::run_mha("--model " + model_path +
                      " --text 'qxvbtmrk qxvbtm' --format html --output " + path + " --layer 1");
    REQUIRE(r.status == 0);
    CHECK(r.output.empty());  // everything goes to the page
    const std::string page = test::read_text(path);
    std::remove(path.c_str());
    const auto count = [&](const std::string& piece) {
        std::size_t n = 0;
        for (std::size_t at = page.find(piece); at != std::string::npos;
             at = page.find(piece, at + 1)) {
            ++n;
        }
        return n;
    };
    CHECK_THAT(page,
               Catch::Contains("layer 1 of 2") && Catch::Contains("<h2>Next character</h2>") &&
                   Catch::Contains("next character: &apos;r&apos; 87.1%") &&
                   Catch::Contains("<h2>Every layer&apos;s heads</h2>") &&
                   Catch::Contains("every layer&apos;s heads (rows: queries, columns: keys)") &&
                   Catch::Contains("<h2>Head roles</h2>") &&
                   Catch::Contains("<tr><td>1</td><td>0</td><td>0.101</td><td>0.107</td>"
                                   "<td>0.041</td><td class=\"strongest\">0.735</td>"
                                   "<td class=\"role\">induction</td></tr>") &&
                   Catch::EndsWith("</html>\n"));
    CHECK(count("<table class=\"roles\">") == 1);
    CHECK(count("<td class=\"role\">") == 8);  // a row per head of the two layers
    CHECK(page.find("<pre>") == std::string::npos);
    // the prediction, the heads and the roles first, then the traced layer's steps
    CHECK(page.find("id=\"heads\"") < page.find("id=\"roles\""));
    CHECK(page.find("id=\"roles\"") < page.find("<section class=\"step\""));
    CHECK(count("<g class=\"panel\">") == 8);  // 2 layers of 4 heads
    CHECK(count("<rect class=\"cell") == 8 * 15 * 15);
    CHECK(count("<section class=\"step\"") >= 20);  // the embedding, the block, the head
    CHECK(count("<svg") == 1);
    // --head picks the same heads of every layer on the page too
    REQUIRE(test::run_mha("--model " + model_path +
                          " --text 'qxvbtmrk qxvbtm' --format html "
                          "--output " +
                          path + " --head 2 --head 0")
                .status == 0);
    const std::string two = test::read_text(path);
    std::remove(path.c_str());
    CHECK_THAT(two, Catch::Contains("heads 2, 0 of every layer") &&
                        Catch::Contains("layer 1 head 0") && !Catch::Contains("layer 1 head 3"));
}

TEST_CASE("the model loader names what is wrong with a model file", "[model]") {
    const auto good = mha::npy::read_npz(model_path);
    auto arrays = good;
    arrays.at("vocab").values[0] = 65;
    REQUIRE_THROWS_WITH(mha::model_from_arrays(arrays, "m.npz"),
                        "m.npz: vocab[0] must be 0, the unknown token, got 65");
    arrays = good;
    arrays.at("vocab").values[2] = arrays.at("vocab").values[1];
    REQUIRE_THROWS_WITH(mha::model_from_arrays(arrays, "m.npz"),
                        Catch::StartsWith("m.npz: vocab[2] = 32 is not a new Unicode code point"));
    arrays = good;
    arrays.at("heads").values[1] = 5;
    REQUIRE_THROWS_WITH(mha::model_from_arrays(arrays, "m.npz"),
                        "m.npz: heads[1] = 5 does not divide d_model 64");
    arrays = good;
    arrays.erase("lm_head.bias");
    REQUIRE_THROWS_WITH(mha::model_from_arrays(arrays, "m.npz"),
                        Catch::StartsWith("m.npz: missing array 'lm_head.bias'"));
    arrays = good;
    arrays.emplace("layers.2.norm1.weight", good.at("norm.weight"));
    REQUIRE_THROWS_WITH(mha::model_from_arrays(arrays, "m.npz"),
                        Catch::StartsWith("m.npz: unexpected array 'layers.2.norm1.weight'"));
    arrays = good;
    arrays.at("norm.weight").values[3] = std::nan("");
    REQUIRE_THROWS_WITH(mha::model_from_arrays(arrays, "m.npz"),
                        Catch::StartsWith("m.npz: array 'norm.weight' has NaN at index (3,)"));
}

TEST_CASE("mha --model refuses the modern options rather than ignoring them, naming those given",
          "[model][cli]") {
    // the model's layers were trained with learned positions, heads of d_model / h and a
    // softmax of scores / sqrt(d_k): each of these would silently compute another model. The
    // score options (steps 7-9) are refused as a group (ScoreOptions::given), so a new one is
    // refused without a rule of its own.
    const auto [option, named] = GENERATE(table<std::string, std::string>({
        {"--rope half", "--rope"},
        {"--rope interleaved", "--rope"},
        {"--rope-theta 500000", "--rope-theta"},
        {"--alibi", "--alibi"},
        {"--window 4", "--window"},
        {"--window 4 --sink-tokens 1", "--window or --sink-tokens"},
        {"--softcap 30", "--softcap"},
        {"--qk-norm", "--qk-norm"},
        {"--head-dim 8", "--head-dim"},
        {"--scale-base 4", "--scale-base"},
        {"--scale-base 4 --rope half --alibi --softcap 30",
         "--rope, --alibi, --softcap or --scale-base"},
    }));
    const std::string args = "--model " + model_path + " --text Amen " + option;
    test::check_rejected(args, "--model computes its layers as they were trained");
    CHECK_THAT(test::run_mha(args).output, Catch::EndsWith(" combined with " + named + "\n"));
}

TEST_CASE("mha --model refuses the zero key of --add-zero-attn", "[model][cli]") {
    test::check_rejected("--model " + model_path + " --text Amen --add-zero-attn",
                         "--model decides the sizes, weights, bias, mask and form");
}

TEST_CASE("mha --model refuses --heads as it refuses the other sizes, even the default 4",
          "[model][cli]") {
    test::check_rejected("--model " + model_path + " --text Amen --heads 4",
                         "--model decides the sizes, weights, bias, mask and form");
}

namespace {

const std::string tiny = "data/bad/tiny_model.npz";  // tests/data/bad/make_model_fixtures.py

}  // namespace

TEST_CASE(
    "a model or block with NaN or inf anywhere is refused on load, naming the array and "
    "the index, before anything is printed",
    "[model][catalogue]") {
    test::check_rejected("--model data/bad/model_nan_ffn.npz --text ab",
                         "data/bad/model_nan_ffn.npz (layers.0.*): array 'linear1.weight' has NaN "
                         "at index (2, 1); every value must be a finite float32");
    test::check_rejected("--model data/bad/model_inf_norm.npz --text ab",
                         "data/bad/model_inf_norm.npz (layers.0.*): array 'norm2.bias' has inf at "
                         "index (2,)");
    test::check_rejected("--block pre --weights data/bad/block_nan.npz -H 1",
                         "data/bad/block_nan.npz: array 'linear2.bias' has NaN at index (1,)");
}

TEST_CASE("a finite model whose feed-forward overflows float32 stops before printing",
          "[model][catalogue]") {
    test::check_rejected("--model data/bad/model_huge_ffn.npz --text ab",
                         "a value of the feed-forward (linear1, GELU, linear2) overflows float32");
}

TEST_CASE("the model loader refuses heads near 2^64 and surrogate code points in vocab",
          "[model][catalogue]") {
    test::check_rejected("--model data/bad/model_huge_heads.npz --text ab",
                         "data/bad/model_huge_heads.npz: heads[0] is about 1.84e+19, beyond "
                         "2^53; expected a head count");
    test::check_rejected("--model data/bad/model_surrogate.npz --text ab",
                         "data/bad/model_surrogate.npz: vocab[2] = 55296 is not a new Unicode "
                         "code point");
}

TEST_CASE(
    "model tokenisation follows the README's UTF-8 rule: overlong forms, surrogates and "
    "lead bytes F5-FF are one unknown token per byte",
    "[model]") {
    // 'A' overlong (C1 81), U+D800 as ED A0 80, F5 80 80 80: 2 + 3 + 4 bytes, 9 unknown tokens
    const mha::ModelText t = mha::encode_text("a\xC1\x81\xED\xA0\x80\xF5\x80\x80\x80", model());
    CHECK(t.tokens.size() == 10);
    CHECK(t.unknown == 9 + (t.tokens[0] == 0));
}

TEST_CASE(
    "a text longer than the context is refused before any lookup, whatever the "
    "vocabulary",
    "[model]") {
    mha::Model big = model();
    for (std::uint32_t code = 0x4E00; code < 0x4E00 + 20000; ++code) big.vocab.push_back(code);
    REQUIRE_THROWS_WITH(mha::encode_text(std::string(1 << 20, 'a'), big),
                        "--text has 1048576 characters; the model's context is " +
                            std::to_string(model().context()));
}

TEST_CASE("control and bidi characters from the model or the text reach no terminal or SVG raw",
          "[model]") {
    // the vocabulary holds ESC and U+202E; the text holds ESC, CR, a C1 control and U+202E
    const std::string svg = test::temp_path("hostile.svg");
    const test::RunResult r =
        test::run_mha("--model " + tiny +
                          " --text \"$(printf 'a\\033[2J\\r\\302\\233b\\342\\200\\256')\" "
                          "--heatmap --color never --export-svg " +
                          svg,
                      false);
    REQUIRE(r.status == 0);
    CHECK(r.output.find('\x1B') == std::string::npos);
    CHECK(r.output.find('\r') == std::string::npos);
    CHECK(r.output.find("\xC2\x9B") == std::string::npos);
    CHECK(r.output.find("\xE2\x80\xAE") == std::string::npos);
    CHECK_THAT(r.output, Catch::Contains("next character:"));
    const std::string drawn = test::read_text(svg);
    CHECK(drawn.find('\x1B') == std::string::npos);
    CHECK(drawn.find("\xE2\x80\xAE") == std::string::npos);
    CHECK(test::XmlChecker(drawn).well_formed());
    std::remove(svg.c_str());
}

TEST_CASE("the model's SVG is bounded like the plain path's", "[model][catalogue]") {
    // 3 layers x 32 heads of 128 x 128 cells, about 300 bytes a cell: 96 panels pass 256 MiB
    const std::string text = " --text \"$(head -c 128 /dev/zero | tr '\\0' a)\"";
    test::check_rejected("--model data/bad/many_heads.npz" + text + " --export-svg /tmp/never.svg",
                         "--export-svg /tmp/never.svg would take up to ");
    test::check_rejected("--model data/bad/many_heads.npz" + text + " --export-svg /tmp/never.svg",
                         "(96 panels of 128x128 cells), more than the 256 MiB an SVG may take");
    // one layer's 32 heads fit
    const std::string svg = test::temp_path("one-layer.svg");
    CHECK(test::run_mha("--model data/bad/many_heads.npz" + text +
                        " --layer 2 --head 0 --export-svg " + svg)
              .status == 0);
    std::remove(svg.c_str());
}

namespace {

// The ids an integer fixture array holds.
std::vector<std::size_t> ids(const mha::npy::Array& array) {
    std::vector<std::size_t> out;
    for (const double v : array.values) out.push_back(std::size_t(v));
    return out;
}

// max |a − b| / max |b|: the distance to torch's gradient relative to its largest magnitude.
double relative_distance(const Tensor& a, const std::vector<double>& b) {
    REQUIRE(a.numel() == b.size());
    double worst = 0.0, scale = 0.0;
    for (std::size_t i = 0; i < b.size(); ++i) {
        worst = std::max(worst, std::fabs(double(a.data()[i]) - b[i]));
        scale = std::max(scale, std::fabs(b[i]));
    }
    return scale > 0 ? worst / scale : worst;
}

}  // namespace

TEST_CASE("the model's cross-entropy backward equals CharTransformer's autograd", "[backward]") {
    // data/make_model_grad_fixture.py: train.py's CharTransformer, V 7, d_model 8, 2 heads,
    // 2 layers, d_ff 16, context 6; two rows of 6 tokens and their next-character targets;
    // torch.autograd of F.cross_entropy in float32 and float64
    constexpr double relative_tolerance = 1e-4;
    constexpr double loss_tolerance = 1e-6;  // relative, float64's loss
    const mha::Model model = mha::model_from_arrays(mha::npy::read_npz("data/model_grad/model.npz"),
                                                    "data/model_grad/model.npz");
    const auto expected = mha::npy::read_npz("data/model_grad/expected.npz");
    const std::vector<std::size_t> tokens = ids(expected.at("tokens"));
    const std::vector<std::size_t> targets = ids(expected.at("targets"));
    const mha::ModelBackward one = mha::model_forward_backward(model, tokens, targets, 2, 1);
    CHECK(one.loss == Approx(expected.at("loss64").values[0]).epsilon(loss_tolerance));
    CHECK(relative_distance(one.forward.logits, expected.at("logits64").values) <
          relative_tolerance);
    std::size_t compared = 0;
    for (const auto& [name, grad] : mha::model_arrays(one.grads, "grad.")) {
        CAPTURE(name);
        REQUIRE(expected.count(name + "64") == 1);
        CHECK(relative_distance(grad, expected.at(name + "64").values) < relative_tolerance);
        CHECK(relative_distance(grad, expected.at(name + "32").values) < relative_tolerance);
        ++compared;
    }
    CHECK(compared == 30);  // every array of the file: 2 embeddings, 12 per layer, norm, head
    // the same bits at any thread count
    const mha::ModelBackward three = mha::model_forward_backward(model, tokens, targets, 2, 3);
    CHECK(three.loss == one.loss);
    const auto a = mha::model_arrays(one.grads, ""), b = mha::model_arrays(three.grads, "");
    for (std::size_t i = 0; i < a.size(); ++i) {
        CAPTURE(a[i].first);
        CHECK(a[i].second.to_vector() == b[i].second.to_vector());
    }
    REQUIRE_THROWS_WITH(mha::model_forward_backward(model, tokens, {1, 2}, 2, 1),
                        "the model's targets are 2 ids, expected one per token (12)");
}

TEST_CASE("the model's backward in a workspace kept across steps gives the bits of fresh memory",
          "[backward]") {
    const mha::Model model = mha::model_from_arrays(mha::npy::read_npz("data/model_grad/model.npz"),
                                                    "data/model_grad/model.npz");
    const auto expected = mha::npy::read_npz("data/model_grad/expected.npz");
    const std::vector<std::size_t> tokens = ids(expected.at("tokens"));
    const std::vector<std::size_t> targets = ids(expected.at("targets"));
    const mha::ModelBackward fresh = mha::model_forward_backward(model, tokens, targets, 2, 2);
    mha::Workspace workspace;
    // a step on other rows first: the blocks then hold its values, not zeros
    std::vector<std::size_t> other(tokens.rbegin(), tokens.rend());
    mha::model_forward_backward(model, other, targets, 2, 2, &workspace);
    const std::uint64_t after_first = workspace.bytes();
    CHECK(after_first > 0);
    const mha::ModelBackward reused =
        mha::model_forward_backward(model, tokens, targets, 2, 2, &workspace);
    CHECK(workspace.bytes() == after_first);  // the second step takes no new block
    CHECK(reused.loss == fresh.loss);
    CHECK(reused.forward.logits.to_vector() == fresh.forward.logits.to_vector());
    const auto a = mha::model_arrays(fresh.grads, ""), b = mha::model_arrays(reused.grads, "");
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        CAPTURE(a[i].first);
        CHECK(a[i].second.to_vector() == b[i].second.to_vector());
    }
}

TEST_CASE("mha --model --backward saves CharTransformer's gradients of one text", "[backward]") {
    // row 0 of data/model_grad/expected.npz: tokens 3 5 0 6 3 2, targets 5 0 6 3 2 0; the
    // vocabulary is [unknown, a ... f], so the text is "ce" + any unknown character + "fcb" +
    // unknown: 7 characters, the model reads the first 6 and predicts the last 6
    constexpr double relative_tolerance = 1e-4;
    const std::string saved = test::temp_path("model-grads.npz");
    const test::RunResult run = test::run_mha(
        "--model data/model_grad/model.npz --text cezfcbz --backward --save " + saved);
    REQUIRE(run.status == 0);
    const auto expected = mha::npy::read_npz("data/model_grad/expected.npz");
    const double loss = expected.at("row0.loss64").values[0];
    CHECK_THAT(run.output, Catch::Contains("loss: " + mha::fixed(loss, 4) +
                                           " nats, the mean cross-entropy of predicting each "
                                           "next character of --text (6 positions)"));
    const auto actual = mha::npy::read_npz(saved);
    std::remove(saved.c_str());
    std::size_t compared = 0;
    for (const auto& [name, array] : actual) {
        if (name.rfind("grad.", 0) != 0) continue;
        CAPTURE(name);
        const Tensor grad = mha::npy::to_tensor(array);
        CHECK(relative_distance(grad, expected.at("row0." + name + "64").values) <
              relative_tolerance);
        CHECK(relative_distance(grad, expected.at("row0." + name + "32").values) <
              relative_tolerance);
        ++compared;
    }
    CHECK(compared == 30);
    CHECK(relative_distance(mha::npy::to_tensor(actual.at("logits")),
                            expected.at("row0.logits64").values) < relative_tolerance);
    test::check_rejected("--model data/model_grad/model.npz --text c --backward",
                         "--backward on --model predicts each next character of --text, so it "
                         "needs at least 2 characters, got 1");
    test::check_rejected("--model data/model_grad/model.npz --text cezfcbzz --backward",
                         "--text has 8 characters; the model's context is 6 (--backward reads "
                         "one more, the last only as a target)");
    test::check_rejected("--model data/model_grad/model.npz --text ab --grad-output x.npy",
                         "--backward on --model differentiates the cross-entropy of predicting "
                         "each next character of --text; it takes no --grad-output");
}

TEST_CASE("--model --backward traces b23 ... b0, the traced layer in full", "[backward]") {
    const test::RunResult run = test::run_mha(
        "--model data/model_grad/model.npz --text cezfcbz --backward --layer 1 --trace");
    REQUIRE(run.status == 0);
    const std::string out = test::flat(run.output);
    CHECK_THAT(out, Catch::Contains("b23 grad dlogits = (F.softmax(logits, -1)"));
    CHECK_THAT(out, Catch::Contains("b22 grad dnorm.weight"));
    CHECK_THAT(out, Catch::Contains("b14 grad dOut = dh"));
    CHECK_THAT(out, Catch::Contains("b0 block dx = layers[0]'s backward of dx"));
    CHECK_THAT(out, Catch::Contains("b0 grad dposition_embedding.weight"));
    const test::RunResult shapes = test::run_mha(
        "--model data/model_grad/model.npz --text cezfcbz --backward --shapes-only --trace");
    REQUIRE(shapes.status == 0);
    CHECK_THAT(test::flat(shapes.output), Catch::Contains("b0 grad dtoken_embedding.weight"));
}

}  // namespace test_model
