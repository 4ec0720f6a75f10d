// Tests for the printers: NumPy-style values, tensor statistics, the text and JSON reports.

#include "show/json_report.h"
#include "show/summary.h"
#include "show/text_report.h"
#include "show/values.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace test_show {

using namespace mha;

namespace {

constexpr double stats_margin = 1e-12;  // statistics are summed in double over a few values
const float nan_value = std::numeric_limits<float>::quiet_NaN();
const float inf_value = std::numeric_limits<float>::infinity();

// A strict JSON reader that only answers: is text exactly one valid document?
class JsonChecker {
public:
    explicit JsonChecker(const std::string& text) : text_(text) {}

    bool valid() {
        skip_space();
        if (!value()) return false;
        skip_space();
        return at_ == text_.size();
    }

private:
    bool value() {
        if (at_ >= text_.size()) return false;
        switch (text_[at_]) {
            case '{':
                return members('}', true);
            case '[':
                return members(']', false);
            case '"':
                return string();
            default:
                return literal("true") || literal("false") || literal("null") || number();
        }
    }

    // An object (keyed) or an array: opening bracket already under at_.
    bool members(char close, bool keyed) {
        ++at_;
        skip_space();
        if (eat(close)) return true;
        do {
            skip_space();
            if (keyed && !(string() && (skip_space(), eat(':')))) return false;
            skip_space();
            if (!value()) return false;
            skip_space();
        } while (eat(','));
        return eat(close);
    }

    bool string() {
        if (!eat('"')) return false;
        while (at_ < text_.size()) {
            const unsigned char c = static_cast<unsigned char>(text_[at_++]);
            if (c == '"') return true;
            if (c < 0x20) return false;
            if (c == '\\' && !escape()) return false;
        }
        return false;
    }

    bool escape() {
        if (at_ >= text_.size()) return false;
        const char e = text_[at_++];
        if (e != 'u') return std::strchr("\"\\/bfnrt", e) != nullptr;
        for (int i = 0; i < 4; ++i) {
            if (at_ >= text_.size() || !std::isxdigit(static_cast<unsigned char>(text_[at_++])))
                return false;
        }
        return true;
    }

    bool number() {
        eat('-');
        if (!eat('0') && digits() == 0) return false;
        if (eat('.') && digits() == 0) return false;
        if (eat('e') || eat('E')) {
            if (!eat('+')) eat('-');
            if (digits() == 0) return false;
        }
        return true;
    }

    std::size_t digits() {
        const std::size_t start = at_;
        while (at_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[at_]))) ++at_;
        return at_ - start;
    }

    bool literal(const std::string& word) {
        if (text_.compare(at_, word.size(), word) != 0) return false;
        at_ += word.size();
        return true;
    }

    bool eat(char c) {
        if (at_ >= text_.size() || text_[at_] != c) return false;
        ++at_;
        return true;
    }

    void skip_space() {
        while (at_ < text_.size() && std::strchr(" \t\r\n", text_[at_]) != nullptr) ++at_;
    }

    const std::string& text_;
    std::size_t at_ = 0;
};

std::size_t display_width(const std::string& line) {
    std::size_t width = 0;
    for (unsigned char c : line) width += (c & 0xC0) != 0x80 ? 1 : 0;
    return width;
}

std::size_t widest_line(const std::string& text) {
    std::istringstream lines(text);
    std::size_t widest = 0;
    for (std::string line; std::getline(lines, line);)
        widest = std::max(widest, display_width(line));
    return widest;
}

// i / 7 for i = 0..5 in float32, as np.arange(6, dtype=np.float32) / np.float32(7).
Tensor sevenths() {
    std::vector<float> values;
    for (int i = 0; i < 6; ++i) values.push_back(float(i) / 7.0f);
    return Tensor({2, 3}, values);
}

RunInfo small_run() {
    RunInfo info;
    info.batch = 2;
    info.seq_len = 8;
    info.kv_len = 8;
    info.d_model = 256;
    info.heads = 4;
    info.kv_heads = 4;
    info.head_dim = 64;
    info.kdim = 256;
    info.vdim = 256;
    info.threads = 2;
    info.kernels = "sse2";
    info.parameters = 263168;
    info.weights_source = "seeded (seed 0)";
    info.inputs_source = "seeded (seed 0)";
    return info;
}

// Step 5 for Q in a (B=2, N=8, d_model=256, h=4) run: a transpose, nothing copied.
Step transpose_step() {
    Step step;
    step.kind = mha::StepKind::MoveHeads;
    step.operand = mha::Operand::Q;
    step.number = 5;
    step.name = "transpose";
    step.tensor = "Q";
    step.expression = "Q.transpose(1, 2)";
    step.dims = {"B", "h", "N", "d_k"};
    step.shape = {2, 4, 8, 64};
    step.strides = {2048, 64, 256, 1};
    step.contiguous = false;
    return step;
}

// A causal mask for N = M = 3: query i sees keys 0..i.
Step mask_step(const Tensor& scores) {
    Step step;
    step.kind = mha::StepKind::Mask;
    step.number = 8;
    step.name = "mask";
    step.tensor = "scores";
    step.expression = "scores + mask  (blocked: -inf)";
    step.dims = {"B", "h", "N", "M"};
    step.shape = scores.shape();
    step.strides = scores.strides();
    step.facts.masks.emplace().causal = true;  // "causal: query i attends to keys 0..i"
    step.facts.mask_queries = step.facts.mask_keys = 3;
    step.allowed = {{true, false, false}, {true, true, false}, {true, true, true}};
    step.value = &scores;
    return step;
}

}  // namespace

// Every expected string below is what NumPy 1.24 prints for the same float32 array after
// np.set_printoptions(precision=4): print(np.arange(6, dtype=np.float32).reshape(2, 3) /
// np.float32(7)).
TEST_CASE("format_values prints a small matrix like NumPy", "[show][values]") {
    CHECK(format_values(sevenths(), "") ==
          "[[0.     0.1429 0.2857]\n"
          " [0.4286 0.5714 0.7143]]");
    CHECK(format_values(sevenths(), "    ") ==
          "    [[0.     0.1429 0.2857]\n"
          "     [0.4286 0.5714 0.7143]]");
}

TEST_CASE("format_values reads a transposed tensor through its strides", "[show][values]") {
    const Tensor transposed = sevenths().transpose(0, 1);
    REQUIRE_FALSE(transposed.is_contiguous());
    CHECK(format_values(transposed, "") ==
          "[[0.     0.4286]\n"
          " [0.1429 0.5714]\n"
          " [0.2857 0.7143]]");
}

TEST_CASE("format_values summarises more than 1000 elements with 3 edge items", "[show][values]") {
    // element (0, j, r, c) = 100 + (140 j + 70 r + c) / 8: 1120 elements, so axes 1 (8) and
    // 3 (70) keep 3 items at each edge around "..."; axes 0 (1) and 2 (2) are short enough.
    std::vector<float> values;
    for (int i = 0; i < 1120; ++i) values.push_back(100.0f + float(i) / 8.0f);
    const Tensor t({1, 8, 2, 70}, values);
    CHECK(format_values(t, "") ==
          "[[[[100.    100.125 100.25  ... 108.375 108.5   108.625]\n"
          "   [108.75  108.875 109.    ... 117.125 117.25  117.375]]\n"
          "\n"
          "  [[117.5   117.625 117.75  ... 125.875 126.    126.125]\n"
          "   [126.25  126.375 126.5   ... 134.625 134.75  134.875]]\n"
          "\n"
          "  [[135.    135.125 135.25  ... 143.375 143.5   143.625]\n"
          "   [143.75  143.875 144.    ... 152.125 152.25  152.375]]\n"
          "\n"
          "  ...\n"
          "\n"
          "  [[187.5   187.625 187.75  ... 195.875 196.    196.125]\n"
          "   [196.25  196.375 196.5   ... 204.625 204.75  204.875]]\n"
          "\n"
          "  [[205.    205.125 205.25  ... 213.375 213.5   213.625]\n"
          "   [213.75  213.875 214.    ... 222.125 222.25  222.375]]\n"
          "\n"
          "  [[222.5   222.625 222.75  ... 230.875 231.    231.125]\n"
          "   [231.25  231.375 231.5   ... 239.625 239.75  239.875]]]]");
}

TEST_CASE("format_values wraps long rows and spells nan and inf like NumPy", "[show][values]") {
    SECTION("rows wrap before column 75") {
        std::vector<float> values;
        for (int i = 0; i < 24; ++i) values.push_back(float(i) / 3.0f);
        CHECK(format_values(Tensor({2, 12}, values), "") ==
              "[[0.     0.3333 0.6667 1.     1.3333 1.6667 2.     2.3333 2.6667 3.\n"
              "  3.3333 3.6667]\n"
              " [4.     4.3333 4.6667 5.     5.3333 5.6667 6.     6.3333 6.6667 7.\n"
              "  7.3333 7.6667]]");
    }
    SECTION("magnitudes far apart switch to e-notation") {
        const Tensor t({4}, {1e-5f, -inf_value, nan_value, 2.5f});
        CHECK(format_values(t, "") == "[1.0e-05    -inf     nan 2.5e+00]");
    }
}

TEST_CASE("stats_of leaves NaN and inf out of the statistics", "[show][summary]") {
    // finite values 1, 2, 4: mean 7/3; population variance
    // ((1 - 7/3)^2 + (2 - 7/3)^2 + (4 - 7/3)^2) / 3 = (16/9 + 1/9 + 25/9) / 3 = 14/9.
    const TensorStats stats = stats_of(Tensor({5}, {1.0f, 2.0f, nan_value, 4.0f, -inf_value}));
    CHECK(stats.mean == Approx(7.0 / 3.0).margin(stats_margin));
    CHECK(stats.std == Approx(std::sqrt(14.0) / 3.0).margin(stats_margin));
    CHECK(stats.min == 1.0);
    CHECK(stats.max == 4.0);
    CHECK(stats.nan_count == 1);
    CHECK(stats.inf_count == 1);
}

TEST_CASE("TextReport prints the run, each step and the output in 80 columns", "[show][text]") {
    std::ostringstream out;
    TextReport report(out, true);
    RunInfo info = small_run();
    info.values = true;
    report.begin(info);
    report.on_step(transpose_step());
    Step contiguous = transpose_step();
    contiguous.kind = mha::StepKind::Contiguous;
    contiguous.operand = mha::Operand::None;
    contiguous.number = 12;
    contiguous.name = "contiguous";
    contiguous.copied_bytes = 16384;
    contiguous.macs = 1048576;
    contiguous.contiguous = true;
    report.on_step(contiguous);
    const Tensor scores({1, 1, 3, 3}, {1, -inf_value, -inf_value, 2, 3, -inf_value, 4, 5, 6});
    report.on_step(mask_step(scores));
    ForwardResult result;
    result.output = Tensor({1, 2, 2}, {1.0f, 2.0f, nan_value, 4.0f});
    result.fully_masked_rows = 2;
    report.finish(result, 0.4123);
    const std::string text = out.str();

    SECTION("begin") {
        CHECK(text.rfind("mha: multi-head attention, step by step\n"
                         "  maths: src/core/reference.cpp (plain loops, forward and backward)\n"
                         "  B=2  N=8  M=8  d_model=256  h=4  d_k=64\n"
                         "  (self-attention, bias, 2 threads, sse2 kernels)\n"
                         "  weights: seeded (seed 0)   inputs: seeded (seed 0)\n"
                         "  parameters: 263,168 = 4·256² + 4·256\n",
                         0) == 0);
    }
    SECTION("a step's two lines") {
        CHECK(text.find("\n\n 5  transpose    Q.transpose(1, 2)\n"
                        "    (B=2, h=4, N=8, d_k=64)  strides (2048, 64, 256, 1)  non-contiguous\n"
                        "    copied 0 B  MACs 0\n") != std::string::npos);
        CHECK(text.find("\n12  contiguous   Q.transpose(1, 2)\n") != std::string::npos);
        CHECK(text.find("  contiguous\n    copied 16 KiB  MACs 1,048,576\n") != std::string::npos);
    }
    SECTION("notes, mask grid and values") {
        CHECK(text.find(
                  " 8  mask         scores + mask  (blocked: -inf)\n"
                  "    (B=1, h=1, N=3, M=3)  strides (9, 9, 3, 1)  contiguous  copied 0 B  MACs 0\n"
                  "    · causal: query i attends to keys 0..i\n"
                  "    mask for batch 0, head 0 (. attends, x blocked):\n"
                  "             key 0 1 2\n"
                  "      query 0    . x x\n"
                  "      query 1    . . x\n"
                  "      query 2    . . .\n"
                  "    [[[[  1. -inf -inf]\n"
                  "       [  2.   3. -inf]\n"
                  "       [  4.   5.   6.]]]]\n") != std::string::npos);
    }
    SECTION("finish") {
        // finite outputs 1, 2, 4: mean 7/3, std sqrt(14)/3 = 1.2472
        CHECK(text.find("\n\noutput (B=1, N=2, d_model=2): mean 2.3333  std 1.2472  min 1.0000  "
                        "max 4.0000\n"
                        "  not finite, left out of the statistics: 1 NaN, 0 inf (of 4 values)\n"
                        "fully masked: 2 query rows") != std::string::npos);
        CHECK(text.find("\nwall time: 0.41 ms (forward pass, 2 threads)\n") != std::string::npos);
        CHECK(text.back() == '\n');
    }
    CHECK(widest_line(text) <= 80);
}

TEST_CASE("TextReport names cross-attention, kdim/vdim and causal", "[show][text]") {
    std::ostringstream out;
    TextReport report(out, false);
    CHECK_FALSE(report.enabled());
    RunInfo info = small_run();
    info.self_attention = false;
    info.kdim = 12;
    info.vdim = 10;
    info.bias = false;
    info.causal = true;
    info.threads = 1;
    report.begin(info);
    CHECK(out.str().find("  B=2  N=8  M=8  d_model=256  h=4  d_k=64  kdim=12  vdim=10\n"
                         "  (cross-attention, no bias, causal, 1 thread, sse2 kernels)\n") !=
          std::string::npos);
}

TEST_CASE("JsonReport streams one valid document", "[show][json]") {
    std::ostringstream out;
    JsonReport report(out);
    CHECK(report.enabled());
    RunInfo info = small_run();
    info.values = true;
    info.weights_source = "C:\\weights\\\"mha\".npz";
    report.begin(info);
    report.on_step(transpose_step());
    const Tensor scores({1, 1, 3, 3}, {0.1f, -inf_value, nan_value, 2, 3, -inf_value, 4, 5, 6});
    Step masked = mask_step(scores);
    masked.expression = "Q Kᵀ / √d_k \"scaled\"";
    masked.facts.masks->notes.push_back("tab\there");
    report.on_step(masked);
    ForwardResult result;
    result.output = Tensor({1, 2, 2}, {1.0f, 2.0f, nan_value, 4.0f});
    result.fully_masked_rows = 2;
    report.finish(result, 0.5);
    const std::string json = out.str();

    CHECK(JsonChecker(json).valid());
    CHECK_FALSE(JsonChecker("{\"a\":[1,]}").valid());  // the checker does reject broken documents
    CHECK_FALSE(JsonChecker("{\"a\":NaN}").valid());
    CHECK(json.back() == '\n');
    CHECK(json.rfind(
              "{\"tool\":\"mha\",\"schema_version\":1,\"config\":{\"B\":2,\"N\":8,\"M\":8,\"d_"
              "model\":256,\"h\":4,"
              "\"G\":4,\"d_k\":64,\"kdim\":256,\"vdim\":256,\"self_attention\":true,\"bias\":true,"
              "\"causal\":false,\"threads\":2,",
              0) == 0);
    CHECK(json.find("\"weights\":\"C:\\\\weights\\\\\\\"mha\\\".npz\"") != std::string::npos);
    CHECK(json.find("\"parameters\":263168,\"steps\":[") != std::string::npos);
    CHECK(
        json.find(
            "{\"step\":5,\"name\":\"transpose\",\"tensor\":\"Q\",\"expression\":\"Q.transpose(1, "
            "2)\","
            "\"dims\":[\"B\",\"h\",\"N\",\"d_k\"],\"shape\":[2,4,8,64],\"strides\":[2048,64,256,1],"
            "\"contiguous\":false,\"copied_bytes\":0,\"macs\":0,\"notes\":[]}") !=
        std::string::npos);
    CHECK(json.find("\"expression\":\"Q Kᵀ / √d_k \\\"scaled\\\"\"") != std::string::npos);
    CHECK(json.find("\"tab\\there\"") != std::string::npos);
    CHECK(json.find("\"allowed\":[[true,false,false],[true,true,false],[true,true,true]]") !=
          std::string::npos);
    CHECK(json.find("\"values\":[[[[0.100000001,null,null],[2,3,null],[4,5,6]]]]") !=
          std::string::npos);
    CHECK(json.find("],\"output\":{\"shape\":[1,2,2],\"mean\":2.33333333,\"std\":1.24721913,"
                    "\"min\":1,\"max\":4,\"nan_count\":1,\"inf_count\":0},"
                    "\"fully_masked_rows\":2,\"wall_time_ms\":0.5}\n") != std::string::npos);
    CHECK(std::strtof("0.100000001", nullptr) ==
          0.1f);  // nine digits read back as the same float32
}

}  // namespace test_show
