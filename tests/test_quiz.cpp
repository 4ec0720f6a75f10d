// mha quiz: the answer forms people type, questions that agree with the trace,
// and grading from an answers file with the score and the exit status.

#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "app/classroom/answer_form.h"
#include "app/classroom/quiz.h"
#include "app/classroom/quiz_questions.h"
#include "core/error.h"
#include "helpers.h"

namespace test_quiz {

using namespace mha;

namespace {

using Numbers = std::vector<std::uint64_t>;

std::string write_answers(const std::string& name, const std::vector<std::string>& lines) {
    const std::string path = test::temp_path(name);
    std::ofstream out(path);
    for (const std::string& line : lines) out << line << "\n";
    return path;
}

std::vector<std::string> right_answers(const std::vector<Question>& questions) {
    std::vector<std::string> answers;
    for (const Question& q : questions) answers.push_back(spelled_answer(q));
    return answers;
}

}  // namespace

TEST_CASE("a list answer is read in every form people type", "[quiz][answers]") {
    const std::string typed = GENERATE(
        as<std::string>{}, "2,4,8,64", "(2, 4, 8, 64)", "[2 4 8 64]", " 2 ,4, 8 ,64 ", "2x4x8x64",
        "2 × 4 × 8 × 64", "torch.Size([2, 4, 8, 64])", "(B=2, h=4, N=8, d_k=64)", "{2;4;8;64}");
    CAPTURE(typed);
    CHECK(parse_number_list(typed) == Numbers{2, 4, 8, 64});
}

TEST_CASE("a list answer with anything else in it is not read", "[quiz][answers]") {
    const std::string typed =
        GENERATE(as<std::string>{}, "", "()", "2,4,eight", "2.5, 4", "-2, 4", "B=, 4", "twelve");
    CAPTURE(typed);
    CHECK_FALSE(parse_number_list(typed).has_value());
    CHECK(parse_number_list("none") == Numbers{});
    CHECK(parse_number_list(" [12] ") == Numbers{12});
}

TEST_CASE("a number answer takes separators and byte units", "[quiz][answers]") {
    CHECK(parse_amount("263168") == 263168u);
    CHECK(parse_amount("263,168") == 263168u);
    CHECK(parse_amount("263_168") == 263168u);
    CHECK(parse_amount("1,048,576") == 1048576u);
    CHECK(parse_amount("16 KiB") == 16384u);  // 16·1024
    CHECK(parse_amount("16kib") == 16384u);
    CHECK(parse_amount("1.5 MiB") == 1572864u);  // 1.5·1024·1024
    CHECK(parse_amount("512 B") == 512u);
    CHECK(parse_amount("512 bytes") == 512u);
    for (const char* bad : {"", "26,31,68", "2631,68", "1.5", "0.3 KiB", "12 apples", "1e3",
                            "99999999999999999999", "(64)", "4,"}) {
        CAPTURE(bad);
        CHECK_FALSE(parse_amount(bad).has_value());
    }
}

TEST_CASE("quiz answers come from the trace of the question's own configuration", "[quiz]") {
    const std::vector<Topic> all = {Topic::Shapes, Topic::DK,      Topic::Parameters,
                                    Topic::Macs,   Topic::KvCache, Topic::Copies};
    const std::vector<Question> questions = make_questions(11, 12, all);
    REQUIRE(questions.size() == 12);
    for (const Question& q : questions) {
        CAPTURE(q.text);
        CHECK(is_right(q, spelled_answer(q)));
        CHECK_FALSE(is_right(q, "7"));
        CHECK_FALSE(q.explanation.empty());
        // The configuration line gives every size a question needs, never d_k itself.
        CHECK_THAT(q.text, Catch::Contains("d_model=") && Catch::Contains("h=") &&
                               !Catch::Contains("d_k="));
    }
    // Taken in turn: question i is on topic i mod 6.
    CHECK(questions[1].topic == Topic::DK);
    CHECK(questions[7].topic == Topic::DK);
    CHECK(questions[5].answer == Numbers{12});  // contiguous() is the only copy
    // d_k questions explain with the division.
    CHECK_THAT(questions[1].explanation, Catch::StartsWith("d_k = d_model / h = "));
}

TEST_CASE("tokens questions: GPT-2's pattern pieces and byte symbols, asked only by name",
          "[quiz][tokenize]") {
    const std::vector<Question> questions = make_questions(5, 30, {Topic::Tokens});
    std::size_t counts = 0, symbols = 0;
    for (const Question& q : questions) {
        CAPTURE(q.text);
        CHECK(q.topic == Topic::Tokens);
        CHECK(is_right(q, spelled_answer(q)));
        CHECK_THAT(q.text, Catch::Contains("'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+"));
        CHECK_THAT(q.explanation, Catch::Contains("branch /"));
        if (q.text.find("Into how many pieces") != std::string::npos) {
            ++counts;
            CHECK_THAT(q.explanation, Catch::StartsWith(std::to_string(q.answer[0]) + " pieces:"));
        } else {
            ++symbols;
            CHECK_THAT(q.explanation, Catch::StartsWith("one symbol per UTF-8 byte: "));
        }
    }
    CHECK(counts > 5);
    CHECK(symbols > 5);
    // the default rotation leaves tokens out
    const test::RunResult r = test::run_mha("quiz --count 10 --questions");
    CHECK(r.output.find("[tokens]") == std::string::npos);
    CHECK(test::run_mha("quiz --topics tokens --count 1 --questions").output.find("[tokens]") !=
          std::string::npos);
}

// A size the question's first line states, e.g. stated(q, "d_model") for "d_model=64".
std::uint64_t stated(const Question& q, const std::string& name) {
    const std::size_t at = q.text.find(" " + name + "=");
    REQUIRE(at != std::string::npos);
    return std::stoull(q.text.substr(at + name.size() + 2));
}

TEST_CASE("gradient questions read the backward's steps and agree with the formulas",
          "[quiz][backward]") {
    const std::vector<Question> questions = make_questions(2, 40, {Topic::Gradients});
    std::size_t shapes = 0, macs = 0, sums = 0;
    for (const Question& q : questions) {
        CAPTURE(q.text);
        const auto asks = [&](const char* words) {
            return q.text.find(words) != std::string::npos;
        };
        CHECK(q.topic == Topic::Gradients);
        CHECK(is_right(q, spelled_answer(q)));
        CHECK_FALSE(is_right(q, "7"));
        CHECK_THAT(q.explanation, Catch::Contains("\nb"));  // the backward step's trace lines
        const std::uint64_t B = std::stoull(q.text.substr(2)), N = stated(q, "N");
        const std::uint64_t M = stated(q, "M"), d = stated(q, "d_model"), h = stated(q, "h");
        const bool shared = asks(" G=");
        const std::uint64_t G = shared ? stated(q, "G") : h, d_k = d / h;
        if (asks("how many query heads")) {
            CHECK(q.answer == Numbers{h / G});  // the adjoint of repeat_interleave
            ++sums;
        } else if (q.kind == AnswerKind::SizeList) {
            if (asks("dS = P *") || asks("dP = dO_h @")) CHECK(q.answer == Numbers{B, h, N, M});
            if (asks("D = (dO_h * O_h)")) CHECK(q.answer == Numbers{B, h, N});
            if (asks("dW_q = ")) CHECK(q.answer == Numbers{d, d});
            if (asks("dW_k = ")) CHECK(q.answer == Numbers{G * d_k, d});
            if (asks(".sum(2)")) CHECK(q.answer == Numbers{B, G, M, d_k});
            ++shapes;
        } else {
            // (N, M) by (M, d_k) and its transposes, per (batch, head)
            if (asks("dV = P.transpose") || asks("dQ = dscores @ K"))
                CHECK(q.answer == Numbers{B * h * N * M * d_k});
            if (asks("dS = P *")) CHECK(q.answer == Numbers{B * h * N * M});
            if (asks("dW_o = ")) CHECK(q.answer == Numbers{B * N * d * d});
            ++macs;
        }
    }
    CHECK(shapes > 0);
    CHECK(macs > 0);
    CHECK(sums > 0);
}

TEST_CASE("quiz questions depend only on the seed", "[quiz]") {
    const auto texts = [](std::uint64_t seed) {
        std::string all;
        for (const Question& q : make_questions(seed, 6, {Topic::Shapes, Topic::Macs})) {
            all += q.text + spelled_answer(q) + q.explanation;
        }
        return all;
    };
    CHECK(texts(5) == texts(5));
    CHECK(texts(5) != texts(6));
}

TEST_CASE("d_k, parameter and KV-cache answers agree with the formulas on the stated sizes",
          "[quiz]") {
    for (const Question& q : make_questions(3, 9, {Topic::DK, Topic::Parameters, Topic::KvCache})) {
        CAPTURE(q.text);
        const std::uint64_t B = std::stoull(q.text.substr(2)), M = stated(q, "M");
        const std::uint64_t d = stated(q, "d_model"), h = stated(q, "h");
        const bool bias = q.text.find("with bias") != std::string::npos;
        if (q.topic == Topic::DK) CHECK(q.answer == Numbers{d / h});
        // four (d, d) matrices, plus four biases of d
        if (q.topic == Topic::Parameters)
            CHECK(q.answer == Numbers{4 * d * d + (bias ? 4 * d : 0)});
        // K and V, (B, M, d) each, 4 bytes a float
        if (q.topic == Topic::KvCache) CHECK(q.answer == Numbers{2 * B * M * d * 4});
    }
}

TEST_CASE("mha quiz --answers grades a file: score on stdout, pass or fail in the status",
          "[quiz][cli]") {
    const std::vector<Question> questions =
        make_questions(7, 4, {Topic::Shapes, Topic::DK, Topic::Parameters, Topic::Macs});
    std::vector<std::string> answers = right_answers(questions);
    const std::string all_right = write_answers("all-right.txt", answers);
    answers[2] = "12";
    answers[3] = "# a comment line is skipped\n3";
    const std::string half = write_answers("half.txt", answers);

    const test::RunResult pass = test::run_mha(
        "quiz --seed 7 --count 4 --topics shapes,d_k,parameters,macs --answers " + all_right);
    CHECK(pass.status == 0);
    CHECK_THAT(pass.output, Catch::Contains("score: 4/4 (100%), pass (pass mark 60%)"));

    const test::RunResult fail = test::run_mha(
        "quiz --seed 7 --count 4 --topics shapes,d_k,parameters,macs --answers " + half);
    CHECK(fail.status == 1);
    CHECK_THAT(fail.output, Catch::Contains("score: 2/4 (50%), fail (pass mark 60%)") &&
                                Catch::Contains("wrong: you answered '12', the answer is") &&
                                Catch::Contains("why:"));
    const test::RunResult lenient = test::run_mha(
        "quiz --seed 7 --count 4 --topics shapes,d_k,parameters,macs --pass 50 --answers " + half);
    CHECK(lenient.status == 0);
    std::remove(all_right.c_str());
    std::remove(half.c_str());
}

TEST_CASE("mha quiz asks on stdin and --questions prints a hand-out", "[quiz][cli]") {
    std::istringstream in("4\n");
    std::ostringstream out;
    CHECK(run_quiz({"--count", "2", "--seed", "1"}, in, false, out) == 1);
    CHECK_THAT(out.str(), Catch::Contains("Question 1 of 2") && Catch::Contains("> 4\nwrong:") &&
                              Catch::Contains("(no more answers)") &&
                              Catch::Contains("score: 0/2 (0%), fail"));

    // Enter alone is asked again, not graded; s skips with the answer shown; q quits.
    std::istringstream keys("\n  \ns\n\nq\n");
    std::ostringstream asked;
    CHECK(run_quiz({"--count", "3", "--seed", "1"}, keys, false, asked) == 1);
    CHECK_THAT(asked.str(), Catch::Contains("> \n>   \n> s\nskipped: the answer is ") &&
                                Catch::Contains("Question 2 of 3") &&
                                Catch::Contains("> q\n(quit after 1 of 3 questions)") &&
                                !Catch::Contains("wrong") && !Catch::Contains("Question 3 of 3") &&
                                Catch::Contains("score: 0/3 (0%), fail"));

    const test::RunResult handout = test::run_mha("quiz --questions --count 3 --seed 1");
    CHECK(handout.status == 0);
    CHECK_THAT(handout.output, Catch::Contains("Question 3 of 3") && !Catch::Contains("why:") &&
                                   !Catch::Contains("score:"));
}

TEST_CASE("mha quiz: bad options are one line and status 2", "[quiz][cli]") {
    const auto [args, message] = GENERATE(table<std::string, std::string>({
        {"--count 0", "quiz --count must be at least 1, got 0"},
        {"--count 101", "quiz --count must be at most 100"},
        {"--topics shapes,colours", "quiz --topics expects a comma-separated list of shapes, d_k"},
        {"--pass 120", "quiz --pass is a percentage from 0 to 100, got 120"},
        {"--answers /nonexistent/answers.txt",
         "cannot read /nonexistent/answers.txt: No such file or directory"},
        {"--answers=", "quiz --answers expects a file name"},
        {"--seed", "quiz --seed needs a value"},
        {"--questions=yes", "quiz --questions takes no value"},
        {"--colour red", "unknown quiz option '--colour'"},
        {"--colour", "unknown quiz option '--colour'"},
        {"stray", "unknown quiz option 'stray'"},
        {"--questions --answers a.txt", "quiz --questions prints a hand-out and grades nothing"},
    }));
    CAPTURE(args);
    const test::RunResult r = test::run_mha("quiz " + args);
    CHECK(r.status == 2);
    CHECK_THAT(r.output, Catch::StartsWith("mha: error: ") && Catch::Contains(message));
    CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
}

TEST_CASE("mha quiz --help fits 80 columns and names every topic", "[quiz][cli]") {
    const test::RunResult r = test::run_mha("quiz --help");
    CHECK(r.status == 0);
    std::istringstream lines(r.output);
    for (std::string line; std::getline(lines, line);) {
        CAPTURE(line);
        CHECK(line.size() <= 80);
    }
    for (const auto& [name, topic] : topic_names()) CHECK_THAT(r.output, Catch::Contains(name));
}

TEST_CASE("blank lines from a pipe end the quiz after a bound; a terminal is asked again",
          "[quiz][cli]") {
    // `yes '' | mha quiz` once never ended: each blank line asked again
    const test::RunResult r =
        test::run_command("yes '' | " + test::mha_binary() + " quiz --count 1 2>&1");
    CHECK(r.status == 1);
    CHECK_THAT(r.output,
               Catch::Contains("(no more answers)") && Catch::Contains("score: 0/1 (0%), fail"));
    std::istringstream blanks(std::string(40, '\n'));
    std::ostringstream asked;
    CHECK(run_quiz({"--count", "1", "--seed", "1"}, blanks, false, asked) == 1);
    const std::string shown = asked.str();
    std::size_t prompts = 0;
    for (std::size_t at = shown.find("> \n"); at != std::string::npos;
         at = shown.find("> \n", at + 1)) {
        ++prompts;
    }
    CHECK(prompts == 16);  // max_blank_lines, then "(no more answers)"
}

TEST_CASE("quiz echoes answers through the terminal's sanitiser, from a file and from stdin",
          "[quiz]") {
    const std::string hostile =
        "\x1B]0;owned\x07\r\xC2\x9B"
        "2J\xE2\x80\xAE"
        "4";
    const std::string file = write_answers("hostile.txt", {"\xEF\xBB\xBF" + hostile});
    const test::RunResult from_file = test::run_mha("quiz --count 1 --seed 1 --answers " + file);
    std::istringstream in(hostile + "\n");
    std::ostringstream from_stdin;
    run_quiz({"--count", "1", "--seed", "1"}, in, false, from_stdin);
    for (const std::string& shown : {from_file.output, from_stdin.str()}) {
        CHECK(shown.find('\x1B') == std::string::npos);
        CHECK(shown.find('\x07') == std::string::npos);
        CHECK(shown.find('\r') == std::string::npos);
        CHECK(shown.find("\xC2\x9B") == std::string::npos);
        CHECK(shown.find("\xE2\x80\xAE") == std::string::npos);
        CHECK(shown.find("\xEF\xBB\xBF") == std::string::npos);
    }
    std::remove(file.c_str());
}

TEST_CASE("a multiply-add question names its step before it asks", "[quiz]") {
    for (const Question& q : make_questions(3, 12, {Topic::Macs})) {
        CAPTURE(q.text);
        CHECK_THAT(q.text, Catch::Contains(".\nFor step ") &&
                               Catch::EndsWith(":\nhow many multiply-adds does it take?") &&
                               !Catch::Contains("this step"));
    }
}

TEST_CASE("serving questions: every kind, answers from the trace that agree with the formulas",
          "[quiz][serving]") {
    const std::vector<Question> questions = make_questions(11, 40, {Topic::Serving});
    std::set<std::string> kinds;
    const char* openings[] = {"sequence 0's\nblock table", "internal fragmentation",
                              "each new token add", "--draft-tree", "--kv-quant int",
                              "--prefill-chunks"};
    for (const Question& q : questions) {
        CAPTURE(q.text, q.explanation);
        CHECK(q.topic == Topic::Serving);
        CHECK(is_right(q, spelled_answer(q)));
        for (const char* opening : openings)
            if (q.text.find(opening) != std::string::npos) kinds.insert(opening);
        std::smatch m;
        const std::uint64_t B = std::stoull(q.text.substr(2)), G = stated(q, "G"),
                            d_k = stated(q, "d_k");
        if (std::regex_search(q.text, m, std::regex("--kv-block-size ([0-9]+) --kv-pool-seed [0-9]+"
                                                    ", sequence 0's\\nblock table ends as \\[([0-9, ]+)\\]"
                                                    "[^=]*position t=([0-9]+)"))) {
            // block_table[t // S], slot t % S, read off the table the question states
            const std::uint64_t S = std::stoull(m[1]), t = std::stoull(m[3]);
            std::vector<std::uint64_t> table;
            std::istringstream entries(std::regex_replace(m[2].str(), std::regex(","), " "));
            for (std::uint64_t e; entries >> e;) table.push_back(e);
            CHECK(q.answer == Numbers{table[t / S], t % S});
        } else if (std::regex_search(q.text, m, std::regex("--kv-block-size ([0-9]+) \\(float32 K "
                                                           "and V\\), once token ([0-9]+)"))) {
            // ceil(k / S)·S − k slots of every sequence, K and V, 4 bytes a float
            const std::uint64_t S = std::stoull(m[1]), k = std::stoull(m[2]);
            CHECK(q.answer == Numbers{2 * B * G * ((k + S - 1) / S * S - k) * d_k * 4});
        } else if (q.text.find("each new token add") != std::string::npos) {
            CHECK(q.answer == Numbers{2 * B * G * d_k * 4});
        } else if (std::regex_search(q.text, m, std::regex("--decode ([0-9]+) --draft-tree "
                                                           "([-0-9,]+) [^]*draft token ([0-9]+)"))) {
            // the prefix, the ancestors, itself
            std::vector<long> parents;
            std::istringstream list(std::regex_replace(m[2].str(), std::regex(","), " "));
            for (long p; list >> p;) parents.push_back(p);
            const std::uint64_t P = std::stoull(m[1]) - parents.size();
            std::uint64_t seen = P + 1;
            for (long at = parents[std::stoul(m[3])]; at >= 0; at = parents[std::size_t(at)])
                ++seen;
            CHECK(q.answer == Numbers{seen});
        } else if (std::regex_search(q.text, m, std::regex("T=([0-9]+) tokens with --kv-quant "
                                                           "int([48]) --kv-quant-axis token "
                                                           "--kv-quant-group ([0-9]+)"))) {
            // codes of `bits` bits, two floats per group of g along d_k
            const std::uint64_t T = std::stoull(m[1]), bits = std::stoull(m[2]),
                                g = std::stoull(m[3]), values = 2 * B * G * T * d_k;
            CHECK(q.answer == Numbers{values * bits / 8 + values / g * 2 * 4});
        } else {
            REQUIRE(std::regex_search(q.text, m, std::regex("--prefill-chunks ([0-9,]+), chunk "
                                                            "([0-9]+)[^]*query ([0-9]+)")));
            std::vector<std::uint64_t> chunks;
            std::istringstream list(std::regex_replace(m[1].str(), std::regex(","), " "));
            for (std::uint64_t c; list >> c;) chunks.push_back(c);
            std::uint64_t first = 0;
            for (std::size_t c = 0; c + 1 < std::stoul(m[2]); ++c) first += chunks[c];
            CHECK(q.answer == Numbers{first + std::stoull(m[3]) + 1});
        }
    }
    CHECK(kinds.size() == 6);
}

TEST_CASE("serving is asked by name only: a seed's quiz and the kv-cache topic ask what they "
          "asked before it",
          "[quiz][serving]") {
    // tests/data/golden/quiz_seed7_and_kv_cache.txt: the questions, answers and score of
    // these two runs, made by the tool before the serving topic existed (the explanations,
    // indented, are left out: they quote the trace, whose numbers follow the kernels)
    const std::string zeros = write_answers("zeros.txt", std::vector<std::string>(18, "0"));
    const test::RunResult all = test::run_mha("quiz --seed 7 --count 18 --answers " + zeros);
    const test::RunResult kv =
        test::run_mha("quiz --seed 3 --count 4 --topics kv-cache --answers " + zeros);
    std::string unindented;
    std::istringstream lines(all.output + kv.output);
    for (std::string line; std::getline(lines, line);)
        if (line.rfind(" ", 0) != 0) unindented += line + "\n";
    CHECK(unindented == test::read_text("data/golden/quiz_seed7_and_kv_cache.txt"));
    CHECK_THAT(all.output, !Catch::Contains("[serving]"));
    std::remove(zeros.c_str());
}

}  // namespace test_quiz
