// Tests for --text input: tokens, seeded embeddings and the sinusoidal positional encoding.

#include <catch2/catch.hpp>
#include <cmath>

#include "core/error.h"
#include "io/printable.h"
#include "io/text.h"
#include "show/svg.h"

namespace test_text {

using namespace mha;

namespace {

constexpr double float_margin = 1e-6;  // sin and cos rounded to float32

}  // namespace

TEST_CASE("tokenize splits words and punctuation") {
    CHECK(tokenize("The cat sat, on the mat.") ==
          std::vector<std::string>{"The", "cat", "sat", ",", "on", "the", "mat", "."});
    CHECK(tokenize("  don't\tstop!!  ") == std::vector<std::string>{"don't", "stop", "!", "!"});
    CHECK(tokenize("naïve café") == std::vector<std::string>{"naïve", "café"});
    REQUIRE_THROWS_WITH(tokenize("   "), Catch::Contains("--text has no words"));
}

TEST_CASE("the same word gets the same embedding, whatever its case") {
    CHECK(token_embedding("The", 16) == token_embedding("the", 16));
    CHECK(token_embedding("cat", 16) != token_embedding("mat", 16));
    const std::vector<float> wide = token_embedding("cat", 16);
    CHECK(token_embedding("cat", 8) == std::vector<float>(wide.begin(), wide.begin() + 8));
}

TEST_CASE("positional encoding: PE(pos, 2i) = sin(pos w_i), PE(pos, 2i+1) = cos(pos w_i)") {
    // width 4: w_0 = 10000^0 = 1, w_1 = 10000^(-2/4) = 0.01
    const Tensor pe = positional_encoding(3, 4);
    CHECK(pe.at({0, 0}) == 0.0f);
    CHECK(pe.at({0, 1}) == 1.0f);
    CHECK(pe.at({1, 0}) == Approx(0.841470985).margin(float_margin));  // sin 1
    CHECK(pe.at({1, 1}) == Approx(0.540302306).margin(float_margin));  // cos 1
    CHECK(pe.at({2, 2}) == Approx(0.019998667).margin(float_margin));  // sin 0.02
    CHECK(pe.at({2, 3}) == Approx(0.999800007).margin(float_margin));  // cos 0.02
    CHECK(encoding_frequency(1, 4) == Approx(0.01));
}

TEST_CASE("text_input puts the embedding in the first half and the position in the second") {
    const std::vector<std::string> tokens = {"a", "b", "a"};
    const Tensor x = text_input(tokens, 8);
    REQUIRE(x.shape() == Shape{1, 3, 8});
    const Tensor pe = positional_encoding(3, 4);
    const std::vector<float> a = token_embedding("a", 4);
    for (std::size_t f = 0; f < 4; ++f) {
        CHECK(x.at({0, 0, f}) == a[f]);
        CHECK(x.at({0, 2, f}) == a[f]);
        CHECK(x.at({0, 2, 4 + f}) == pe.at({2, f}));
    }
    REQUIRE_THROWS_WITH(text_input(tokens, 10), Catch::Contains("multiple of 4"));
}

TEST_CASE(
    "one sanitiser per medium: the terminal's replaces controls, C1 and bidi characters; "
    "the SVG's keeps the XML well-formed") {
    const std::string replacement = "\xEF\xBF\xBD";
    // ESC, CR, U+009B (CSI as a C1 control), U+202E, U+2066, an invalid byte, then é kept
    CHECK(mha::sanitized("a\x1B"
                         "b\r\xC2\x9B\xE2\x80\xAE\xE2\x81\xA6\xFF\xC3\xA9") ==
          "a" + replacement + "b" + replacement + replacement + replacement + replacement +
              replacement + "\xC3\xA9");
    CHECK(mha::sanitized("two\nlines\tand tab", true) == "two\nlines\tand tab");
    CHECK(mha::sanitized("one\nline") == "one" + replacement + "line");
    CHECK(mha::xml_escaped("<a href=\"x\">&'\x01\xC0") ==
          "&lt;a href=&quot;x&quot;&gt;&amp;&apos;" + replacement + replacement);
}

}  // namespace test_text
