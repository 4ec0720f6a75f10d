// tokenizer.json: Llama 2's, Llama 3's and Qwen 2's layouts over real vocabularies (built from
// npm packages by tests/ensure-npm-tokenizers) against committed ids; small hand-made files for
// each normalizer, pre-tokenizer and decoder; NFC against Python's unicodedata; every refusal.

#include "core/error.h"
#include "helpers.h"
#include "io/json.h"
#include "tokenize/aligned_text.h"
#include "tokenize/load.h"
#include "tokenize/nfc.h"
#include "tokenize/patterns.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

namespace test_tokenizer_json {

using namespace mha;
using namespace mha::tokenizers;

namespace {

const char* const built_dir = "npm/tokenizers";  // tests/ensure-npm-tokenizers builds them here

std::vector<std::uint32_t> ids_of(const std::vector<TokenPiece>& tokens) {
    std::vector<std::uint32_t> ids;
    for (const TokenPiece& t : tokens) ids.push_back(t.id);
    return ids;
}

std::vector<std::uint32_t> id_row(const json::Value& row) {
    std::vector<std::uint32_t> ids;
    for (const json::Value& id : row.items) ids.push_back(std::uint32_t(std::stoul(id.text)));
    return ids;
}

std::string nfc_of(const std::string& text) {
    return utf8_of(unicode::nfc(code_points(text)).codes);
}

// Every corpus string encodes to the committed ids (the BOS first when the tokenizer adds one)
// and, without its special tokens, decodes back to itself when it is in NFC (Qwen 2's
// normalizer composes the others: the corpus has a few).
void check_corpus(const std::string& name, std::size_t bos) {
    const std::string dir = std::string(built_dir) + "/" + name;
    if (!test::exists(dir + "/tokenizer.json")) {
        WARN("skipped: no tests/"
             << dir << "/tokenizer.json (tests/ensure-npm-tokenizers builds it from npm)");
        return;
    }
    Ledger ledger;
    const Tokenizer tokenizer = load_tokenizer(dir, ledger);
    const json::Value corpus =
        json::parse(test::read_text("data/tokenizers/corpus.json"), "corpus.json");
    const std::string fixture = name + "_ids.json";
    const json::Value expected =
        json::parse(test::read_text("data/tokenizers/" + fixture), fixture);
    const std::vector<json::Value>& rows = expected.find("ids")->items;
    REQUIRE(corpus.items.size() >= 300);
    REQUIRE(rows.size() == corpus.items.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const std::string& text = corpus.items[i].text;
        const std::vector<std::uint32_t> want = id_row(rows[i]);
        INFO(name << " corpus string " << i << ": " << text);
        const std::vector<std::uint32_t> got = ids_of(tokenizer.encode(text, true));
        CHECK(got == want);
        if (nfc_of(text) == text) CHECK(tokenizer.decode({want.begin() + bos, want.end()}) == text);
    }
}

// A folder holding one tokenizer.json.
std::string json_folder(const std::string& name, const std::string& json) {
    const std::string dir = test::temp_path(name);
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/tokenizer.json", std::ios::binary) << json;
    return dir;
}

// A tokenizer.json over a small alphabet (SentencePiece's and GPT-2's space symbols, a byte
// token for "c", an unknown token), with the given stages and model options.
std::string toy_json(const std::string& normalizer, const std::string& pre_tokenizer,
                     const std::string& decoder, const std::string& model_extra = "",
                     const std::string& post = "null") {
    return R"({"added_tokens": [{"id": 9, "content": "<s>", "special": true}],
  "normalizer": )" +
           normalizer + R"(, "pre_tokenizer": )" + pre_tokenizer + R"(, "post_processor": )" +
           post + R"(, "decoder": )" + decoder + R"(,
  "model": {"type": "BPE", )" +
           model_extra + R"("vocab": {"a": 0, "b": 1, "\u2581": 2, "\u2581a": 3,
    "ab": 4, "\u0120": 5, "\u0120a": 6, "<0x63>": 7, "<unk>": 8, "<s>": 9, " ": 10, "ba": 11,
    "<0xFF>": 12}, "merges": [["\u2581", "a"], "a b", "\u0120 a"]}})";
}

const char* const bos_template = R"({"type": "TemplateProcessing",
  "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
  "special_tokens": {"<s>": {"id": "<s>", "ids": [9], "tokens": ["<s>"]}}})";

Tokenizer toy(const std::string& json) {
    Ledger ledger;
    return load_tokenizer(json_folder("toy_tokenizer_json", json), ledger);
}

// The tokens' pieces, "|"-joined, with the post-processor's special tokens.
std::string pieces_of(const Tokenizer& tokenizer, const std::string& text) {
    std::string out;
    for (const TokenPiece& t : tokenizer.encode(text, true))
        out += (out.empty() ? "" : "|") + t.piece;
    return out;
}

std::string metaspace(const char* scheme) {
    return std::string(R"({"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": ")") +
           scheme + R"(", "split": true})";
}

}  // namespace

TEST_CASE("tokenizer.json: Llama 3's ids equal llama3-tokenizer-js's on the corpus", "[tokenize]") {
    check_corpus("llama3", 1);
}

TEST_CASE("tokenizer.json: Llama 2's ids equal llama-tokenizer-js's on the corpus", "[tokenize]") {
    check_corpus("llama2", 1);
}

TEST_CASE("tokenizer.json: Qwen 2's pattern and ids equal python3-regex's on the corpus",
          "[tokenize]") {
    check_corpus("qwen2", 0);
    const json::Value corpus =
        json::parse(test::read_text("data/tokenizers/corpus.json"), "corpus.json");
    const json::Value expected =
        json::parse(test::read_text("data/tokenizers/qwen2_ids.json"), "qwen2_ids.json");
    const std::vector<json::Value>& rows = expected.find("pieces")->items;
    REQUIRE(rows.size() == corpus.items.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const std::string text = nfc_of(corpus.items[i].text);  // the pattern sees it after NFC
        if (text.find("<|endoftext|>") != std::string::npos) continue;  // split out before it
        std::vector<std::string> want, got;
        for (const json::Value& piece : rows[i].items) want.push_back(piece.text);
        for (const PatternPiece& p : match_pattern(Pattern::qwen2, text))
            got.push_back(text.substr(p.begin, p.end - p.begin));
        INFO("corpus string " << i << ": " << text);
        CHECK(got == want);
    }
}

TEST_CASE("tokenizer.json: Llama 3's pattern names the branch of each piece", "[tokenize]") {
    const std::string text = "I'M here:\n\n  12345 dogs!!\n (ok)";
    std::vector<std::string> got;
    for (const PatternPiece& p : match_pattern(Pattern::llama3, text))
        got.push_back(text.substr(p.begin, p.end - p.begin) + "|" + p.branch);
    const char* const letters = "[^\\r\\n\\p{L}\\p{N}]?\\p{L}+";
    const char* const others = " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*";
    const std::vector<std::string> want = {
        std::string("I|") + letters,
        "'M|(?i:'s|'t|'re|'ve|'m|'ll|'d)",
        std::string(" here|") + letters,
        std::string(":\n\n|") + others,
        " |\\s+(?!\\S)",  // of two spaces, the last goes with what follows...
        " |\\s+",         // ...but digits take no space, so it stands alone
        "123|\\p{N}{1,3}",
        "45|\\p{N}{1,3}",
        std::string(" dogs|") + letters,
        std::string("!!\n|") + others,
        std::string(" (|") + others,
        std::string("ok|") + letters,
        std::string(")|") + others,
    };
    CHECK(got == want);
    const std::string digits = "12345";
    CHECK(match_pattern(Pattern::qwen2, digits).size() == 5);  // Qwen 2: one digit a piece
    CHECK(pattern_of("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
                     "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+") ==
          Pattern::llama3);
}

TEST_CASE("tokenizer.json: NFC equals Python's unicodedata on 7083 cases", "[tokenize]") {
    std::istringstream lines(test::read_text("data/tokenizers/nfc_cases.txt"));
    const auto parse = [](const std::string& hexes) {
        std::vector<std::uint32_t> codes;
        std::istringstream in(hexes);
        for (std::string hex; in >> hex;)
            codes.push_back(std::uint32_t(std::stoul(hex, nullptr, 16)));
        return codes;
    };
    std::size_t count = 0;
    for (std::string line; std::getline(lines, line); ++count) {
        const std::size_t semicolon = line.find(';');
        INFO("case " << line);
        CHECK(unicode::nfc(parse(line.substr(0, semicolon))).codes ==
              parse(line.substr(semicolon + 1)));
    }
    CHECK(count == 7083);
}

TEST_CASE("tokenizer.json: Llama 2's stages by hand: Prepend, Replace, byte fallback, BOS, Strip",
          "[tokenize]") {
    const Tokenizer tokenizer = toy(toy_json(
        R"({"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]})",
        "null",
        R"({"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "\u2581"},
            "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]})",
        R"("byte_fallback": true, "fuse_unk": true, "unk_token": "<unk>", )", bos_template));
    // "▁a▁ab▁c": ▁ a at 0 and at 2 first (rank 0, leftmost first), then nothing joins ▁a with b;
    // "c" is not in the vocabulary: its byte token
    TokenizeTrace trace;
    const std::vector<TokenPiece> tokens = tokenizer.encode("a ab c", true, &trace);
    CHECK(ids_of(tokens) == std::vector<std::uint32_t>{9, 3, 3, 1, 2, 7});
    CHECK(pieces_of(tokenizer, "a ab c") == "<s>|\u2581a|\u2581a|b|\u2581|<0x63>");
    REQUIRE(trace.normalizers.size() == 2);
    CHECK(trace.normalizers[0].name == "Prepend(\"\u2581\")");
    CHECK(trace.normalizers[0].text == "\u2581a ab c");
    CHECK(trace.normalizers[1].text == "\u2581a\u2581ab\u2581c");
    REQUIRE(trace.fallbacks.size() == 1);
    CHECK(trace.fallbacks[0].fallback.ids == std::vector<std::uint32_t>{7});
    REQUIRE(trace.specials.size() == 1);
    CHECK(trace.specials[0].piece == "<s>");
    // the bytes each token came from: the prepended ▁ takes the first character's
    CHECK(tokens[1].begin == 0);
    CHECK(tokens[5].begin == 5);
    CHECK(tokens[5].end == 6);
    CHECK(tokenizer.decode({3, 3, 1, 2, 7}) == "a ab c");
    CHECK(ids_of(tokenizer.encode("a ab c", false)) == std::vector<std::uint32_t>{3, 3, 1, 2, 7});
    // invalid UTF-8 from byte tokens decodes to U+FFFD, one per byte
    CHECK(tokenizer.decode({12, 0}) ==
          "\xEF\xBF\xBD"
          "a");
}

TEST_CASE("tokenizer.json: Metaspace's prepend schemes, and its decoder", "[tokenize]") {
    const char* const decoder =
        R"({"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always"})";
    const Tokenizer always = toy(toy_json("null", metaspace("always"), decoder));
    CHECK(pieces_of(always, "a ab") == "\u2581a|\u2581a|b");
    CHECK(pieces_of(always, "<s>a") == "<s>|\u2581a");
    CHECK(always.decode({3, 3, 1}) == "a ab");
    const Tokenizer first = toy(toy_json("null", metaspace("first"), decoder));
    CHECK(pieces_of(first, "a ab") == "\u2581a|\u2581a|b");
    CHECK(pieces_of(first, "<s>a") == "<s>|a");  // not the text's first stretch: no ▁
    // Mistral's later files: first, and no split (the text one piece)
    const Tokenizer mistral = toy(toy_json(
        "null",
        R"({"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": false})",
        R"({"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first"})"));
    TokenizeTrace trace;
    CHECK(ids_of(mistral.encode("a ab", true, &trace)) == std::vector<std::uint32_t>{3, 3, 1});
    CHECK(trace.pieces.size() == 1);
    CHECK(mistral.decode({3, 3, 1}) == "a ab");
    const Tokenizer never = toy(toy_json("null", metaspace("never"), decoder));
    CHECK(pieces_of(never, "a ab") == "a|\u2581a|b");
}

TEST_CASE("tokenizer.json: ByteLevel with its regex and prefix space; Split's behaviors",
          "[tokenize]") {
    const Tokenizer byte_level = toy(
        toy_json("null", R"({"type": "ByteLevel", "add_prefix_space": true, "use_regex": true})",
                 R"({"type": "ByteLevel"})"));
    // " a", " ab" as byte symbols: Ġa; Ġ a b merges "a b" (rank 1) before "Ġ a" (rank 2)
    CHECK(pieces_of(byte_level, "a ab") == "\u0120a|\u0120|ab");
    CHECK(byte_level.decode({6, 5, 4}) == " a ab");
    const auto split = [](const char* behavior) {
        return toy(
            toy_json("null",
                     std::string(R"({"type": "Split", "pattern": {"String": " "}, "behavior": ")") +
                         behavior + R"(", "invert": false})",
                     "null"));
    };
    CHECK(pieces_of(split("MergedWithPrevious"), "a  ab") == "a| | |ab");  // Gemma's
    CHECK(pieces_of(split("MergedWithNext"), "a  ab") == "a| | |ab");
    CHECK(pieces_of(split("Isolated"), "a  ab") == "a| | |ab");
    CHECK(pieces_of(split("Removed"), "a  ab") == "a|ab");
    const Tokenizer llama3 = toy(toy_json("null", R"({"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
         "behavior": "Isolated", "invert": false},
        {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]})",
                                          "null"));
    TokenizeTrace trace;
    CHECK(ids_of(llama3.encode("a ab", true, &trace)) == std::vector<std::uint32_t>{0, 5, 4});
    REQUIRE(trace.pieces.size() == 2);
    CHECK(std::string(trace.pieces[1].branch) == "[^\\r\\n\\p{L}\\p{N}]?\\p{L}+");
}

TEST_CASE("tokenizer.json: ignore_merges, the unknown token and fuse_unk, NFC", "[tokenize]") {
    CHECK(pieces_of(toy(toy_json("null", "null", "null", R"("ignore_merges": true, )")), "ba") ==
          "ba");
    CHECK(pieces_of(toy(toy_json("null", "null", "null", R"("ignore_merges": false, )")), "ba") ==
          "b|a");
    const std::string unk = R"("unk_token": "<unk>", )";
    CHECK(pieces_of(toy(toy_json("null", "null", "null", unk + R"("fuse_unk": true, )")), "azzb") ==
          "a|<unk>|b");
    CHECK(pieces_of(toy(toy_json("null", "null", "null", unk)), "azzb") == "a|<unk>|<unk>|b");
    const Tokenizer nfc = toy(toy_json(R"({"type": "NFC"})", "null", "null", unk));
    TokenizeTrace trace;
    const std::vector<TokenPiece> tokens = nfc.encode("e\xCC\x81", true, &trace);  // e + U+0301
    REQUIRE(trace.normalizers.size() == 1);
    CHECK(trace.normalizers[0].text == "\xC3\xA9");  // é
    REQUIRE(tokens.size() == 1);
    CHECK(tokens[0].begin == 0);
    CHECK(tokens[0].end == 3);
}

namespace {

// A refusal: the file, the key path the message names, the text that starts the value it
// points at (its last occurrence), and the message after "PATH: \"KEY\" at byte N: ".
struct Refusal {
    const char* what;
    std::string json;
    const char* key;
    const char* value;
    const char* message;
};

std::string replaced(std::string text, const std::string& from, const std::string& to) {
    return text.replace(text.find(from), from.size(), to);
}

}  // namespace

TEST_CASE("tokenizer.json: every type, pattern and option not implemented is refused by name",
          "[tokenize]") {
    const std::string plain = toy_json("null", "null", "null");
    const auto split = [](const std::string& body) {
        return toy_json("null", R"({"type": "Split", )" + body + "}", "null");
    };
    const std::vector<Refusal> refusals = {
        {"WordPiece", R"({"model": {"type": "WordPiece", "vocab": {}}})", "model.type",
         "\"WordPiece\"", "model type WordPiece is not supported; mha reads BPE models only"},
        {"Unigram", R"({"model": {"type": "Unigram", "vocab": []}})", "model.type", "\"Unigram\"",
         "model type Unigram is not supported; mha reads BPE models only"},
        {"NFKC", toy_json(R"({"type": "NFKC"})", "null", "null"), "normalizer.type", "\"NFKC\"",
         "normalizer NFKC is not supported; mha reads Prepend, Replace, NFC and Sequence of these"},
        {"Lowercase in a Sequence",
         toy_json(
             R"({"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Lowercase"}]})",
             "null", "null"),
         "normalizer.normalizers[1].type", "\"Lowercase\"",
         "normalizer Lowercase is not supported; mha reads Prepend, Replace, NFC and Sequence of "
         "these"},
        {"Replace with a regex",
         toy_json(R"({"type": "Replace", "pattern": {"Regex": " "}, "content": "_"})", "null",
                  "null"),
         "normalizer.pattern", "{\"Regex\"",
         "the normalizer Replace with a Regex pattern is not supported; mha reads String patterns "
         "here"},
        {"Whitespace", toy_json("null", R"({"type": "Whitespace"})", "null"), "pre_tokenizer.type",
         "\"Whitespace\"",
         "pre-tokenizer Whitespace is not supported; mha reads ByteLevel, Split, Metaspace and "
         "Sequence of these"},
        {"unknown pattern",
         split(R"("pattern": {"Regex": "\\s+"}, "behavior": "Isolated", "invert": false)"),
         "pre_tokenizer.pattern.Regex", "\"\\\\s+\"",
         "the Split pattern \\s+ is not implemented; mha matches GPT-2's, Llama 3's and Qwen 2's "
         "patterns, and strings"},
        {"Contiguous",
         split(R"("pattern": {"String": " "}, "behavior": "Contiguous", "invert": false)"),
         "pre_tokenizer.behavior", "\"Contiguous\"",
         "Split behavior Contiguous is not supported; mha reads Isolated, Removed, "
         "MergedWithPrevious and MergedWithNext"},
        {"invert", split(R"("pattern": {"String": " "}, "behavior": "Isolated", "invert": true)"),
         "pre_tokenizer.invert", "true", "Split with invert true is not supported"},
        {"prepend_scheme", toy_json("null", metaspace("sometimes"), "null"),
         "pre_tokenizer.prepend_scheme", "\"sometimes\"",
         "prepend_scheme sometimes is unknown; expected first, always or never"},
        {"BertProcessing", toy_json("null", "null", "null", "", R"({"type": "BertProcessing"})"),
         "post_processor.type", "\"BertProcessing\"",
         "post-processor BertProcessing is not supported; mha reads TemplateProcessing, ByteLevel "
         "and Sequence of these"},
        {"a template token without ids",
         toy_json(
             "null", "null", "null", "",
             replaced(bos_template, R"("special_tokens": {"<s>")", R"("special_tokens": {"<t>")")),
         "post_processor.single[0].SpecialToken.id", "\"<s>\", \"type_id\"",
         "\"<s>\" is not in special_tokens"},
        {"WordPiece decoder", toy_json("null", "null", R"({"type": "WordPiece"})"), "decoder.type",
         "\"WordPiece\"",
         "decoder WordPiece is not supported; mha reads ByteLevel, Replace, ByteFallback, Fuse, "
         "Strip, Metaspace and Sequence of these"},
        {"dropout", toy_json("null", "null", "null", R"("dropout": 0.1, )"), "model.dropout", "0.1",
         "BPE's dropout is not supported (it drops merges at random)"},
        {"unk_token", toy_json("null", "null", "null", R"("unk_token": "<nope>", )"),
         "model.unk_token", "\"<nope>\"", "the unknown token \"<nope>\" is not in model.vocab"},
        {"single_word",
         replaced(plain, R"("special": true)", R"("special": true, "single_word": true)"),
         "added_tokens[0].single_word", "true",
         "added token \"<s>\" with single_word true is not supported"},
        {"normalized with lstrip",
         replaced(toy_json(R"({"type": "NFC"})", "null", "null"), R"("special": true)",
                  R"("special": true, "lstrip": true, "normalized": true)"),
         "added_tokens[0].normalized", "true",
         "added token \"<s>\" is marked normalized with lstrip or rstrip, which mha does not "
         "implement"},
        {"a merge of three", replaced(plain, R"("a b")", R"("a b c")"), "model.merges[1]",
         "\"a b c\"", "expected two tokens separated by one space, found \"a b c\""},
        {"a pair of three", replaced(plain, R"(["\u2581", "a"])", R"(["\u2581", "a", "b"])"),
         "model.merges[0]", "[\"\\u2581\", \"a\", \"b\"]", "expected a merge of two tokens"},
    };
    for (const Refusal& r : refusals) {
        INFO(r.what);
        const std::string dir = json_folder("refused_tokenizer_json", r.json);
        const std::size_t byte = r.json.rfind(r.value);
        REQUIRE(byte != std::string::npos);
        Ledger ledger;
        REQUIRE_THROWS_WITH(load_tokenizer(dir, ledger), dir + "/tokenizer.json: \"" + r.key +
                                                             "\" at byte " + std::to_string(byte) +
                                                             ": " + r.message);
    }
}

TEST_CASE("tokenizer.json: an added token's lstrip and rstrip take the white space around it",
          "[tokenize]") {
    const auto with = [](const char* flags) {
        return toy(replaced(toy_json("null", "null", "null"), R"("special": true)",
                            std::string(R"("special": true, )") + flags));
    };
    CHECK(pieces_of(with(R"("lstrip": true)"), "a  <s>  b") == "a|<s>| | |b");
    CHECK(pieces_of(with(R"("rstrip": true)"), "a  <s>  b") == "a| | |<s>|b");
    const std::vector<TokenPiece> tokens =
        with(R"("lstrip": true, "rstrip": true)").encode("a <s> b", true);
    REQUIRE(tokens.size() == 3);
    CHECK(tokens[1].begin == 1);  // the token's bytes take the spaces around it
    CHECK(tokens[1].end == 6);
}

TEST_CASE("tokenizer.json: an added token marked normalized is found in the normalized text",
          "[tokenize]") {
    // Llama 2's normalizer writes "<s>" as "▁<s>": it is found at the start or after a space
    const Tokenizer llama2 = toy(replaced(
        toy_json(R"({"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]})",
                 "null", "null"),
        R"("special": true)", R"("special": true, "normalized": true)"));
    CHECK(pieces_of(llama2, "<s>ab") == "<s>|ab");
    CHECK(pieces_of(llama2, "a <s>b") == "\u2581a|<s>|b");
    const std::string json =
        replaced(toy_json(R"({"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"})",
                          "null", "null"),
                 R"("special": true)", R"("special": false, "normalized": true)");
    CHECK(pieces_of(toy(json), "a<s>b") == "a|<s>|b");
}

TEST_CASE(
    "tokenizer.json: a file or parse over the memory budget, a missing model, a merge the "
    "vocabulary lacks, a character with no token",
    "[tokenize]") {
    const std::string json = toy_json("null", "null", "null");
    const std::string dir = json_folder("budget_tokenizer_json", json);
    const std::string path = dir + "/tokenizer.json";
    Ledger small(100);
    REQUIRE_THROWS_WITH(
        load_tokenizer(dir, small),
        path + ": the file needs " + byte_size(json.size()) +
            ", more than --max-memory 100 B; raise --max-memory or use a smaller file");
    Ledger file_only(json.size() + 100);
    REQUIRE_THROWS_WITH(load_tokenizer(dir, file_only),
                        Catch::StartsWith(path + ": parsing it needs ") &&
                            Catch::EndsWith("; raise --max-memory or use a smaller file"));
    Ledger ledger;
    const std::string empty = json_folder("no_model_tokenizer_json", "{}");
    REQUIRE_THROWS_WITH(load_tokenizer(empty, ledger),
                        empty + "/tokenizer.json: byte 0: expected the key \"model\"");
    const std::string unknown =
        json_folder("unknown_merge_tokenizer_json", replaced(json, R"("a b")", R"("a q")"));
    REQUIRE_THROWS_WITH(
        load_tokenizer(unknown, ledger),
        unknown + "/tokenizer.json model.merges[1]: the merge 'a q' has the symbol 'q', which " +
            unknown + "/tokenizer.json model.vocab does not have");
    const Tokenizer tokenizer = toy(json);
    REQUIRE_THROWS_WITH(tokenizer.encode("az", true),
                        Catch::StartsWith("the symbol 'z' is not in ") &&
                            Catch::EndsWith("model.vocab, and the tokenizer has no byte fallback"));
}

TEST_CASE("tokenizer.json: tokenizer_config.json's add_bos_token decides the BOS", "[tokenize]") {
    const auto with_config = [](const std::string& json, const std::string& config) {
        const std::string dir = json_folder("config_tokenizer_json", json);
        std::ofstream(dir + "/tokenizer_config.json", std::ios::binary) << config;
        Ledger ledger;
        return pieces_of(load_tokenizer(dir, ledger), "ab");
    };
    const std::string templated = toy_json("null", "null", "null", "", bos_template);
    const std::string bare = toy_json("null", "null", "null");
    CHECK(with_config(templated, R"({"add_bos_token": false})") == "ab");
    CHECK(with_config(templated, R"({"add_bos_token": true, "bos_token": "<s>"})") == "<s>|ab");
    CHECK(with_config(templated, R"({"model_max_length": 4096})") == "<s>|ab");
    CHECK(with_config(bare, R"({"add_bos_token": true, "bos_token": {"content": "<s>"}})") ==
          "<s>|ab");
    CHECK(with_config(bare,
                      R"({"add_bos_token": true, "add_eos_token": true, "bos_token": "<s>"})") ==
          "<s>|ab");  // never an EOS
    const std::string dir = json_folder("config_tokenizer_json", bare);
    std::ofstream(dir + "/tokenizer_config.json")
        << R"({"add_bos_token": true, "bos_token": "<b>"})";
    Ledger ledger;
    REQUIRE_THROWS_WITH(
        load_tokenizer(dir, ledger),
        dir +
            "/tokenizer_config.json: \"bos_token\" at byte 37: the bos_token \"<b>\" is "
            "not a token of the tokenizer");
}

TEST_CASE("tokenizer.json: Gemma's stages by hand: Replace, a Split on \" \" that finds none",
          "[tokenize]") {
    const Tokenizer tokenizer = toy(toy_json(
        R"({"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"})",
        R"({"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithPrevious", "invert": false})",
        R"({"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "\u2581"},
            "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"}]})",
        R"("byte_fallback": true, "unk_token": "<unk>", "fuse_unk": true, )", bos_template));
    // "a▁ab▁c": no prefix; the spaces are gone before the Split looks for them
    CHECK(pieces_of(tokenizer, "a ab c") == "<s>|a|\u2581a|b|\u2581|<0x63>");
    CHECK(tokenizer.decode({0, 3, 1, 2, 7}) == "a ab c");
}

TEST_CASE("docs/tokenizers.md: GPT-2's and Llama 3's walk-throughs show what mha tokenize prints",
          "[tokenize]") {
    const auto [name, file] =
        GENERATE(std::pair<const char*, const char*>{"gpt2", "vocab.json"},
                 std::pair<const char*, const char*>{"llama3", "tokenizer.json"});
    const std::string folder = std::string(built_dir) + "/" + name;
    if (!test::exists(folder + "/" + file)) {
        WARN("skipped: no tests/" + folder.substr(folder.find("npm/")) + "/" + file +
             " (tests/ensure-npm-tokenizers builds it)");
        return;
    }
    // the ```text block that starts with the command: its lines, the command first
    std::istringstream page(test::read_text("../docs/tokenizers.md"));
    std::vector<std::string> block;
    const std::string command_start =
        std::string("$ mha tokenize --checkpoint tests/npm/tokenizers/") + name + " ";
    for (std::string line; std::getline(page, line);) {
        if (block.empty() && line.rfind(command_start, 0) == 0)
            block.push_back(line);
        else if (!block.empty() && line.rfind("```", 0) == 0)
            break;
        else if (!block.empty())
            block.push_back(line);
    }
    REQUIRE(block.size() > 10);
    const std::string command = block.front().substr(6);  // after "$ mha "
    const test::RunResult r =
        test::run_command("cd .. && " + test::mha_dir() + "/mha " + command + " 2>&1");
    CHECK(r.status == 0);
    std::string shown;
    for (std::size_t i = 1; i < block.size(); ++i) shown += block[i] + "\n";
    CHECK(r.output == shown);
}

TEST_CASE("tokenizer.json: random text round-trips through Llama 2's and Llama 3's tokenizers",
          "[tokenize]") {
    // code points from ASCII, Latin-1, combining marks, Greek, CJK, emoji and private use,
    // spaces, tabs and newlines among them; 300 strings of up to 40
    const std::vector<std::pair<std::uint32_t, std::uint32_t>> ranges = {
        {0x20, 0x7E},     {0x09, 0x0A},       {0xA0, 0xFF},     {0x300, 0x36F}, {0x391, 0x3C9},
        {0x4E00, 0x4FFF}, {0x1F300, 0x1F64F}, {0xE000, 0xE0FF}, {0x20, 0x20}};
    std::mt19937 rng(45);
    std::vector<std::string> texts;
    for (int n = 0; n < 300; ++n) {
        std::vector<std::uint32_t> codes(1 + rng() % 40);
        for (std::uint32_t& c : codes) {
            const auto& [first, last] = ranges[rng() % ranges.size()];
            c = first + rng() % (last - first + 1);
        }
        texts.push_back(utf8_of(codes));
    }
    for (const char* name : {"llama2", "llama3"}) {
        const std::string dir = std::string(built_dir) + "/" + name;
        if (!test::exists(dir + "/tokenizer.json")) {
            WARN("skipped: no tests/" << dir
                                      << "/tokenizer.json (tests/ensure-npm-tokenizers builds it)");
            continue;
        }
        Ledger ledger;
        const Tokenizer tokenizer = load_tokenizer(dir, ledger);
        for (const std::string& text : texts) {
            INFO(name << ": " << text);
            std::vector<std::uint32_t> ids = ids_of(tokenizer.encode(text, false));
            CHECK(tokenizer.decode(ids) == text);
        }
    }
}

TEST_CASE("encode_ids gives encode's ids, with and without the special tokens", "[tokenize]") {
    // the real tokenizers on the corpus and on text around an added token; the toy's BOS template
    const json::Value corpus =
        json::parse(test::read_text("data/tokenizers/corpus.json"), "corpus.json");
    const auto check = [](const Tokenizer& tokenizer, const std::string& text) {
        INFO(text);
        for (const bool special : {true, false})
            CHECK(tokenizer.encode_ids(text, special) == ids_of(tokenizer.encode(text, special)));
    };
    for (const char* name : {"gpt2", "llama2", "llama3", "qwen2"}) {
        const std::string dir = std::string(built_dir) + "/" + name;
        if (!test::exists(dir + "/tokenizer.json") && !test::exists(dir + "/vocab.json")) {
            WARN("skipped: no tests/" << dir << " (tests/ensure-npm-tokenizers builds it)");
            continue;
        }
        Ledger ledger;
        const Tokenizer tokenizer = load_tokenizer(dir, ledger);
        for (const json::Value& text : corpus.items) check(tokenizer, text.text);
        check(tokenizer, "a <|begin_of_text|> b <s> c <|endoftext|>");
    }
    check(toy(toy_json("null", "null", "null", "", bos_template)), "ab <s>a");
}

}  // namespace test_tokenizer_json
