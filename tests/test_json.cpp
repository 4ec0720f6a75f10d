// The JSON reader: values, escapes, offsets, and the errors that name file, key and byte.

#include "io/json.h"

#include "core/error.h"

#include <catch2/catch.hpp>

namespace test_json {

using namespace mha;

TEST_CASE("json: parses every kind of value, keeping member order and offsets", "[json]") {
    std::string text = R"({"b": [1, -2.5e3, true, false, null], "a": {"x": "y"}})";
    json::Value v = json::parse(text, "t.json");
    REQUIRE(v.kind == json::Kind::object);
    REQUIRE(v.members.size() == 2);
    CHECK(v.members[0].first == "b");  // file order, not sorted
    const json::Value& b = *v.find("b");
    REQUIRE(b.items.size() == 5);
    CHECK(b.items[1].text == "-2.5e3");
    CHECK(json::as_double(b.items[1], {"t.json", "b[1]"}) == -2500.0);
    CHECK(json::as_bool(b.items[2], {"t.json", ""}));
    CHECK(b.items[4].kind == json::Kind::null);
    CHECK(b.offset == 6);  // the '[' after {"b": and a space
    CHECK(v.find("a")->find("x")->text == "y");
    CHECK(v.find("missing") == nullptr);
}

TEST_CASE("json: escapes become UTF-8, surrogate pairs included", "[json]") {
    // \u00e9 is é (C3 A9), \ud83d\ude00 is U+1F600 (F0 9F 98 80), raw UTF-8 passes through
    json::Value v = json::parse(R"(["\"\\\/\b\f\n\r\t", "\u00e9", "\ud83d\ude00", "Ġ"])", "t");
    CHECK(v.items[0].text == "\"\\/\b\f\n\r\t");
    CHECK(v.items[1].text == "\xC3\xA9");
    CHECK(v.items[2].text == "\xF0\x9F\x98\x80");
    CHECK(v.items[3].text == "\xC4\xA0");
}

TEST_CASE("json: integers are read exactly, or refused", "[json]") {
    json::Value v = json::parse("[9007199254740993, 2048.0, 1e3, 1.5, -1, 99999999999999999999]", "c");
    json::Where w{"c", "n"};
    CHECK(json::as_int(v.items[0], w) == 9007199254740993LL);  // past 2^53, exact from the digits
    CHECK(json::as_int(v.items[1], w) == 2048);
    CHECK(json::as_size(v.items[2], w) == 1000);
    REQUIRE_THROWS_WITH(json::as_int(v.items[3], w),
                        "c: \"n\" at byte 32: expected an integer, found 1.5");
    REQUIRE_THROWS_WITH(json::as_size(v.items[4], w),
                        "c: \"n\" at byte 37: expected a non-negative integer, found -1");
    REQUIRE_THROWS_WITH(json::as_int(v.items[5], w), Catch::Contains("beyond a 64-bit integer"));
}

TEST_CASE("json: a type mismatch names the file, the key path and the byte", "[json]") {
    json::Value v = json::parse(R"({"rope_scaling": {"factor": "8"}})", "config.json");
    json::Where root{"config.json", ""};
    json::Where factor = root.at("rope_scaling").at("factor");
    REQUIRE_THROWS_WITH(
        json::as_double(*v.find("rope_scaling")->find("factor"), factor),
        "config.json: \"rope_scaling.factor\" at byte 28: expected a number, found a string");
    REQUIRE_THROWS_WITH(json::as_array(v, root.at("x").at(3)),
                        Catch::StartsWith("config.json: \"x[3]\" at byte 0: expected an array"));
}

TEST_CASE("json: malformed text is refused with the byte where it went wrong", "[json]") {
    auto error = [](const std::string& text) {
        try {
            json::parse(text, "f.json");
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("parsed");
    };
    CHECK(error("") == "f.json: byte 0: expected a value, found the end of the text");
    CHECK(error("{\"a\": 1,}") == "f.json: byte 8: expected a key in quotes, found '}'");
    CHECK(error("[1 2]") == "f.json: byte 3: expected ']', found '2'");
    CHECK(error("{\"a\": 1, \"a\": 2}") == "f.json: byte 9: the key \"a\" appears twice");
    CHECK(error("\"abc") == "f.json: byte 4: a string without its closing quote");
    CHECK(error("\"a\nb\"") ==
          "f.json: byte 2: a control character inside a string (write it as \\u00XX)");
    CHECK(error("\"\\ud800x\"") ==
          "f.json: byte 7: a high surrogate without its low half in \\u escapes");
    CHECK(error("\"\\udc00\"") == "f.json: byte 7: a lone low surrogate in \\u escapes");
    CHECK(error("\"\xC0\xAF\"") == "f.json: byte 1: invalid UTF-8 inside a string");
    CHECK(error("\"\xED\xA0\x80\"") == "f.json: byte 1: invalid UTF-8 inside a string");
    CHECK(error("01") == "f.json: byte 1: unexpected text after the JSON value");
    CHECK(error("-") == "f.json: byte 1: expected a digit, found the end of the text");
    CHECK(error("1.e5") == "f.json: byte 2: expected a digit, found 'e'");
    CHECK(error("tru") == "f.json: byte 0: expected a value, found 't'");
    CHECK(error("\"\\q\"") == "f.json: byte 2: an unknown escape \\q");
    CHECK(error(std::string(600, '[')) == "f.json: byte 513: nested deeper than 512");
    CHECK(error(std::string(512, '[') + std::string(512, ']')) == "parsed");
}

TEST_CASE("json: parse_bytes bounds what parsing allocates, before parsing", "[json]") {
    std::string text = "[";
    for (int i = 0; i < 1000; ++i) text += (i ? "," : "") + std::string("[\"ab\", \"cd\"]");
    text += "]";
    std::uint64_t bound = json::parse_bytes(text);
    // 1 + 1000 + 2000 values at sizeof(Value) each at least
    CHECK(bound >= 3001 * sizeof(json::Value));
    CHECK(bound < 3001 * 400 + 3 * text.size());
    CHECK(json::parse(text, "t").items.size() == 1000);
}

}  // namespace test_json
