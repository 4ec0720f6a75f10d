// mha grade: each kind of key line against numbers worked out by hand, the verdict
// with the expected answer and the trace lines, and misuse as exit status 2.

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "app/classroom/answer_form.h"
#include "app/classroom/grade.h"
#include "core/error.h"
#include "helpers.h"

namespace test_grade {

using namespace mha;

namespace {

struct Graded {
    int status;
    std::string output;
};

// Grades the answer lines against the key lines in-process.
Graded grade(const std::vector<std::string>& answers, const std::string& key) {
    const std::string path = test::temp_path("grade-answers.txt");
    {
        std::ofstream out(path);
        for (const std::string& line : answers) out << line << "\n";
    }
    std::istringstream key_in(key);
    std::ostringstream out;
    const int status = run_grade({path}, key_in, out);
    std::remove(path.c_str());
    return {status, out.str()};
}

}  // namespace

TEST_CASE("answers in the forms the trace prints: names, units, step words", "[grade][answers]") {
    CHECK(parse_amount("d_k = 32") == 32u);
    CHECK(parse_amount("d_k=32") == 32u);
    CHECK(parse_amount("step 12") == 12u);
    CHECK(parse_amount("4 MiB") == 4194304u);                   // 4·1024·1024
    CHECK(parse_amount("parameters: 16,640") == std::nullopt);  // a colon is not a name form
    CHECK(parse_number_list("steps 5 and 12") == std::vector<std::uint64_t>{5, 12});
    CHECK(parse_number_list("step 12") == std::vector<std::uint64_t>{12});
    CHECK(answer_matches({AnswerKind::StepList, {5, 12}, ""}, "12, 5"));
    CHECK(answer_matches({AnswerKind::Word, {}, "keep"}, " KEEP "));
    CHECK_FALSE(answer_matches({AnswerKind::Word, {}, "keep"}, "block"));
    CHECK(spelled({AnswerKind::Number, {16640}, ""}) == "16,640");
}

TEST_CASE("answers in the tool's own words: ratios, ranges, names, true/false, MB",
          "[grade][answers]") {
    // the trace prints "4x smaller than MHA's", "keys 0..i", "d_k = 32"; PyTorch's
    // is_contiguous() prints False
    CHECK(parse_amount("4x") == 4u);
    CHECK(parse_amount("4 x") == 4u);
    CHECK(parse_amount("4\xC3\x97") == 4u);  // 4×
    CHECK(parse_amount("4 times") == 4u);
    CHECK(parse_amount("h = 4") == 4u);
    CHECK(parse_amount("d_k=4") == 4u);
    CHECK(parse_amount("4MB") == 4194304u);  // read as MiB, the unit the trace prints
    CHECK(parse_amount("4 MiB") == 4194304u);
    CHECK(parse_amount("4mib") == 4194304u);
    CHECK(parse_amount("2 KB") == 2048u);
    CHECK(parse_amount("4 apples") == std::nullopt);
    CHECK(parse_amount("x") == std::nullopt);
    CHECK(parse_number_list("0..2") == std::vector<std::uint64_t>{0, 1, 2});
    CHECK(parse_number_list("0-2") == std::vector<std::uint64_t>{0, 1, 2});
    CHECK(parse_number_list("keys 0..3") == std::vector<std::uint64_t>{0, 1, 2, 3});
    CHECK(parse_number_list("0\xE2\x80\x93"
                            "2") == std::vector<std::uint64_t>{0, 1, 2});  // 0–2
    CHECK(parse_number_list("0..2, 5") == std::vector<std::uint64_t>{0, 1, 2, 5});
    CHECK(parse_number_list("2..0") == std::nullopt);         // backwards
    CHECK(parse_number_list("0..99999999") == std::nullopt);  // too long a range to spell out
    CHECK(parse_number_list("-") == std::vector<std::uint64_t>{});
    CHECK(answer_matches({AnswerKind::StepList, {0, 1, 2}, ""}, "0..2"));
    CHECK(answer_matches({AnswerKind::StepList, {0, 1, 2}, ""}, "0-2"));
    CHECK_FALSE(answer_matches({AnswerKind::StepList, {0, 1, 2}, ""}, "0..3"));
    CHECK(answer_matches({AnswerKind::Word, {}, "no"}, "False"));
    CHECK(answer_matches({AnswerKind::Word, {}, "yes"}, "true"));
    CHECK_FALSE(answer_matches({AnswerKind::Word, {}, "yes"}, "false"));
    CHECK(answer_matches({AnswerKind::Number, {4}, ""}, "4x"));
    CHECK(answer_matches({AnswerKind::Number, {4194304}, ""}, "4MB"));
    CHECK(spelled({AnswerKind::SizeList, {2, 3}, ""}) == "(2, 3)");
    CHECK(spelled({AnswerKind::StepList, {}, ""}) == "none");
}

TEST_CASE("mha grade: every kind of key line against hand-worked answers", "[grade]") {
    const std::string layer = " : -b 2 -n 5 -d 48 -H 3\n";  // d_k = 48 / 3 = 16
    const Graded g = grade(
        {
            "(2, 3, 5, 16)",   // shape 5 Q: (B, h, N, d_k)
            "240, 16, 48, 1",  // its strides: N·d_model, d_k, d_model, 1
            "no",              // contiguous after the transpose
            "1,920 B",         // copied 12 context: B·N·d_model·4 = 2·5·48·4 = 1,920
            "d_k = 16",        // d_model / h
            "9,408",           // parameters: 4·48² + 4·48 = 9,216 + 192
            "2400",            // macs 6 scores: B·h·N·M·d_k = 2·3·5·5·16
            "600 bytes",       // bytes 9 weights: (2, 3, 5, 5) floats · 4 = 150·4
            "1 MiB",           // kv-cache, G=2: 2 tensors · 1·1024·(2·64) floats · 4 bytes
            "0, 1, 2",         // keys 0, causal N=4 M=6: keys 0..0+6-4
            "4",               // number
            "Keep",            // word
        },
        "shape 5 Q" + layer + "strides 5 Q" + layer + "contiguous 5 Q" + layer +
            "copied 12 context" + layer + "d_k" + layer + "parameters" + layer + "macs 6 scores" +
            layer + "bytes 9 weights" + layer +
            "kv-cache : -b 1 -n 1 -m 1024 -d 512 -H 8 --kv-heads 2\n"
            "keys 0 : -b 1 -n 4 -m 6 -d 16 -H 2 --causal\n"
            "# a comment line\n\n"
            "number 4 -- h / g\n"
            "word keep\n");
    INFO(g.output);
    CHECK(g.status == 0);
    CHECK_THAT(g.output, Catch::Contains("1. right: (2, 3, 5, 16)") &&
                             Catch::Contains("6. right: 9,408") &&
                             Catch::EndsWith("score: 12/12\n"));
}

TEST_CASE("mha grade: bN names the backward's step N of a --backward trace", "[grade][backward]") {
    // B=2, N=M=5, d_model=32, h=4 (d_k = 8), G=2 K/V heads (h/G = 2 query heads each)
    const std::string layer = " : -b 2 -n 5 -d 32 -H 4 --kv-heads 2 --backward\n";
    const Graded g = grade(
        {
            "(2, 2, 5, 8)",  // b10 dV after the group sum: (B, G, M, d_k)
            "(2, 4, 5, 5)",  // b10 dP: P's shape (B, h, N, M)
            "1,600",         // macs b10 dP: B·h·N·M·d_k = 2·4·5·5·8
            "(32, 32)",      // b1 dW_q: W_q's own shape (d_model, d_model)
            "(16, 32)",      // b2 dW_k: W_k is (G·d_k, d_model) = (16, 32)
            "(2, 4, 5, 5)",  // b9 dS, then step 9 of the forward: the weights, same shape
        },
        "shape b10 dV" + layer + "shape b10 dP" + layer + "macs b10 dP" + layer + "shape b1 dW_q" +
            layer + "shape b2 dW_k" + layer + "shape 9 weights" + layer);
    INFO(g.output);
    CHECK(g.status == 0);
    CHECK_THAT(g.output, Catch::EndsWith("score: 6/6\n"));
    // the forward's steps are not the backward's: step 10 has no dV
    std::istringstream key("shape 10 dV" + layer);
    std::ostringstream out;
    const std::string answers = test::temp_path("grade-backward.txt");
    std::ofstream(answers) << "(2, 2, 5, 8)\n";
    CHECK_THROWS_WITH(run_grade({answers}, key, out),
                      Catch::Contains("the trace has no step 10 for dV"));
    std::remove(answers.c_str());
}

TEST_CASE("mha grade: a wrong answer shows the expected one and the trace lines", "[grade]") {
    const Graded g = grade({"(2, 5, 16)", "17"},
                           "shape 5 Q : -b 2 -n 5 -d 48 -H 3\n"
                           "number 16 -- d_k = d_model / h = 48 / 3\n");
    CHECK(g.status == 1);
    CHECK_THAT(
        g.output,
        Catch::Contains("1. wrong: you answered '(2, 5, 16)', the answer is (2, 3, 5, 16)\n") &&
            Catch::Contains("   |  5  transpose    Q.transpose(1, 2)\n") &&
            Catch::Contains("strides (240, 16, 48, 1)  non-contiguous") &&
            Catch::Contains("2. wrong: you answered '17', the answer is 16\n"
                            "   d_k = d_model / h = 48 / 3\n") &&
            Catch::EndsWith("score: 0/2\n"));
    // a short answers file: the lines it lacks, and an empty line, are "no answer"
    const Graded missing = grade({"", "16"}, "number 16\nnumber 16\nnumber 16\n");
    CHECK_THAT(missing.output, Catch::Contains("1. wrong: no answer, the answer is 16\n") &&
                                   Catch::Contains("2. right: 16\n") &&
                                   Catch::Contains("3. wrong: no answer, the answer is 16\n") &&
                                   Catch::EndsWith("score: 1/3\n"));
}

TEST_CASE("mha grade: {N} runs mha with an earlier answer, and matches compares outputs",
          "[grade]") {
    // The PyTorch module of tests/data/parity/self_bias has 4 heads; its output statistics
    // are the ones examples/exercises/06-match-pytorch quotes from PyTorch.
    const std::string files =
        " : --weights ../tests/data/parity/self_bias/weights.npz "
        "--input ../tests/data/parity/self_bias/query.npy --heads {1}\n";
    const std::string key = "matches 0.055026 0.201322 -0.796085 0.432091" + files + "d_k" + files;
    CHECK(grade({"4", "4"}, key).status == 0);
    const Graded two = grade({"2", "8"}, key);  // runs, but another output; d_k = 16 / 2
    CHECK(two.status == 1);
    // d_k 8 is right only for the wrong h = 2: counted, and said to be follow-through
    CHECK_THAT(two.output,
               Catch::Contains("1. wrong: you answered '2'") &&
                   Catch::Contains("2. right as follow-through: 8 follows from your answer to "
                                   "question 1, which is wrong\n") &&
                   Catch::EndsWith("score: 1/2 (1 of them as follow-through)\n"));
    // the right h, written with its name, is substituted as the number it names
    const Graded named = grade({"h = 4", "d_k=4"}, key);
    INFO(named.output);
    CHECK(named.status == 0);
    CHECK_THAT(named.output, Catch::Contains("1. right") && Catch::Contains("2. right: 4\n"));
    // a wrong d_k after a wrong h: the expected answer is said to follow from answer 1
    const Graded both = grade({"2", "5"}, key);
    CHECK_THAT(both.output,
               Catch::Contains("1. wrong: you answered '2', the answer is the one whose output "
                               "has mean 0.055026") &&
                   Catch::Contains("2. wrong: you answered '5', the answer is 8 given your "
                                   "answer to question 1, which is wrong\n"));
    CHECK_THAT(both.output, !Catch::Contains("max 0.432091 given"));
    const Graded three = grade({"3", "5"}, key);  // 16 is not divisible by 3: wrong, not misuse
    CHECK(three.status == 1);
    CHECK_THAT(three.output, Catch::Contains("divisible") && Catch::Contains("score: 0/2"));
    CHECK(grade({"(4)", "4"}, key).status == 1);  // not one word: never reaches the shell
}

TEST_CASE("mha grade: misuse is one line and status 2", "[grade][cli]") {
    const std::string answers = test::temp_path("grade-misuse.txt");
    std::ofstream(answers) << "1\n";
    const auto [args, key, message] = GENERATE_COPY(table<std::string, std::string, std::string>({
        {"", "number 1", "grade needs an answers file first"},
        {"/nonexistent/a.txt", "number 1",
         "cannot read /nonexistent/a.txt: No such file or directory"},
        {answers + " extra", "number 1", "unknown grade option 'extra'"},
        {answers, "", "grade: the key on stdin is empty"},
        {answers, "colour 3", "key line 1: unknown kind 'colour'"},
        {answers, "shape 4 : -b 1", "key line 1: 'shape' takes 2 argument(s)"},
        {answers, "number lots", "key line 1: 'lots' is not a whole number"},
        {answers, "parameters : --heads 3 -d 16", "key line 1: mha --heads 3 -d 16: "},
        {answers, "d_k : --heads {x}", "'{x' in the key: write {N} for answer N"},
        {answers + " --files-in /nonexistent", "number 1", "cannot enter '/nonexistent'"},
    }));
    CAPTURE(args, key);
    const test::RunResult r = test::run_command("printf '%s\\n' '" + key + "' | " +
                                                test::mha_binary() + " grade " + args + " 2>&1");
    CHECK(r.status == 2);
    CHECK_THAT(r.output, Catch::StartsWith("mha: error: ") && Catch::Contains(message));
    CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
    std::remove(answers.c_str());
}

TEST_CASE("mha grade --help names every kind and fits 80 columns", "[grade][cli]") {
    const test::RunResult r = test::run_mha("grade --help");
    CHECK(r.status == 0);
    std::istringstream lines(r.output);
    for (std::string line; std::getline(lines, line);) {
        CAPTURE(line);
        CHECK(line.size() <= 80);
    }
    for (const char* kind :
         {"shape", "strides", "contiguous", "copied", "macs", "bytes", "parameters", "d_k",
          "kv-cache", "keys", "matches", "number", "word", "cache-bytes", "page", "unused"}) {
        CHECK_THAT(r.output, Catch::Contains(std::string("  ") + kind + " "));
    }
}

TEST_CASE("mha grade refuses --model in a key rather than grading another run",
          "[grade][catalogue]") {
    const std::string answers = test::temp_path("grade-model.txt");
    std::ofstream(answers) << "64\n";
    const test::RunResult r = test::run_command(
        "printf '%s\\n' 'd_k : --model ../examples/models/kjv-2x4.npz --text Amen' | " +
        test::mha_binary() + " grade " + answers + " 2>&1");
    CHECK(r.status == 2);
    CHECK(r.output ==
          "mha: error: grade: key line 1: mha --model ../examples/models/kjv-2x4.npz "
          "--text Amen: --model cannot be graded: a key line traces one attention "
          "layer; give the layer's options (--heads, --d-model, ...) or its "
          "--weights\n");
    std::remove(answers.c_str());
}

TEST_CASE("mha grade echoes answers and the key's notes through the terminal's sanitiser",
          "[grade]") {
    const Graded g = grade({"\x1B[2J\rall right\xE2\x80\xAE"}, "number 2 -- see \x1B[31mred");
    CHECK(g.status == 1);
    CHECK(g.output.find('\x1B') == std::string::npos);
    CHECK(g.output.find('\r') == std::string::npos);
    CHECK(g.output.find("\xE2\x80\xAE") == std::string::npos);
    CHECK_THAT(g.output, Catch::Contains("[2J"));  // the rest of the answer is still shown
}

TEST_CASE("a UTF-8 byte order mark at the start of an answers file is not part of answer 1",
          "[grade][answers]") {
    const Graded g = grade({"\xEF\xBB\xBF"
                            "2"},
                           "number 2");
    CHECK(g.status == 0);
    CHECK_THAT(g.output, Catch::Contains("1. right: 2"));
}

TEST_CASE("tokens, pieces and merges keys count what mha tokenize gives", "[grade][tokenize]") {
    // the toy tokenizer (tests/data/tokenizers/toy): "abcab" is one piece of five symbols;
    // a+b (rank 0) twice and ab+c (rank 1) once leave two tokens, abc and ab
    const std::string toy = ": --checkpoint data/tokenizers/toy --text abcab";
    const Graded g = grade({"2", "1", "3", "4"}, "tokens " + toy + "\npieces " + toy + "\nmerges " +
                                                     toy + "\ntokens " + toy);
    CHECK(g.status == 1);
    CHECK_THAT(g.output, Catch::Contains("1. right: 2") && Catch::Contains("2. right: 1") &&
                             Catch::Contains("3. right: 3") &&
                             Catch::Contains("4. wrong: you answered '4', the answer is 2"));
    CHECK_THAT(g.output, Catch::Contains("mha tokenize --checkpoint data/tokenizers/toy --text "
                                         "abcab --trace: 2 tokens; its tokens:"));
    CHECK_THAT(g.output, Catch::Contains("      5  0..3        abc    \"abc\""));
    // the key's own options failing is misuse; a learner's answer in them fails as wrong
    REQUIRE_THROWS_WITH(grade({"1"}, "tokens : --checkpoint data/tokenizers/toy --text abd"),
                        Catch::StartsWith("grade: key line 1: mha tokenize --checkpoint "
                                          "data/tokenizers/toy --text abd: the symbol 'd'"));
    const Graded wrong =
        grade({"abd", "1"}, "word abd\ntokens : --checkpoint data/tokenizers/toy --text {1}");
    CHECK_THAT(wrong.output, Catch::Contains("mha tokenize --checkpoint data/tokenizers/toy "
                                             "--text abd: the symbol 'd' is not in"));
}

TEST_CASE("follow-through names the questions whose wrong answers it used", "[grade]") {
    // d_model and h come from answers 1 and 2, both wrong (16 and 4 are right)
    const std::string key =
        "d_k : -d 32 -H 2\nd_k : -d 16 -H 4\nshape 4 Q : -b 1 -n 3 -d {1} -H {2}\n";
    CHECK_THAT(grade({"8", "2", "7"}, key).output,
               Catch::Contains("3. wrong: you answered '7', the answer is (1, 3, 2, 4) given your "
                               "answers to questions 1 and 2, which are wrong\n"));
    CHECK_THAT(grade({"8", "2", "1, 3, 2, 4"}, key).output,
               Catch::Contains("3. right as follow-through: (1, 3, 2, 4) follows from your "
                               "answers to questions 1 and 2, which are wrong\n"));
}

TEST_CASE("cache-bytes, page and unused keys read a cached form's cache", "[grade][serving]") {
    // B=2 sequences, G=2 heads of d_k=4, blocks of S=4, seed 7: sequence 0's table is
    // [4, 9, 5, 1], so t=13 is in block_table[13 // 4] = block_table[3] = 1, slot 13 % 4 = 1;
    // after 14 tokens 16 - 14 = 2 slots a sequence are unwritten: 2·2·2·2·4·4 = 256 bytes
    const std::string paged = " : -b 2 -d 8 -H 2 --decode 20 --kv-block-size 4 --kv-pool-seed 7";
    // float: 2 (K and V)·B·G·T·d_k·4 = 2·1·2·5·8·4; int8 along d_k in groups of 4: 160 codes
    // of a byte, 40 groups of two floats (320 bytes); the draft's cache holds T = 5 positions;
    // blocks of 5 in order: t=5 is entry 1, block 1, slot 0
    const Graded g =
        grade({"1, 1", "256", "640", "480", "640", "1, 0"},
              "page 13" + paged + "\nunused 13" + paged +
                  "\ncache-bytes : -b 1 -d 16 -H 2 -G 2 --decode 5"
                  "\ncache-bytes : -b 1 -d 16 -H 2 --decode 5 --kv-quant int8 --kv-quant-axis token "
                  "--kv-quant-group 4\ncache-bytes : -b 1 -d 16 -H 2 --decode 5 --draft 2"
                  "\npage 5 : -b 1 -d 8 -H 2 --decode 7 --kv-block-size 5");
    INFO(g.output);
    CHECK(g.status == 0);
    CHECK_THAT(g.output, Catch::EndsWith("score: 6/6\n"));
    REQUIRE_THROWS_WITH(grade({"1"}, "page 3 : -b 1 -d 8 -H 2 --decode 4"),
                        "grade: key line 1: no paged cache step writes position 3 (the options "
                        "need --kv-block-size)");
    REQUIRE_THROWS_WITH(grade({"1"}, "unused : -b 1 --decode 4 --kv-block-size 2"),
                        "grade: key line 1: 'unused' takes 1 argument(s) (see mha grade --help)");
    const Graded none = grade({"1"}, "cache-bytes : -b 1 -d 8 -H 2");
    CHECK(none.status == 1);
    CHECK_THAT(none.output, Catch::Contains("(these options keep no KV cache)"));
}

}  // namespace test_grade
