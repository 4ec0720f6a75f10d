// `mha quiz`: options, then ask (stdin) or grade (--answers FILE), then the score.

#include "app/classroom/quiz.h"

#include <algorithm>
#include <string>

#include "app/classroom/answer_form.h"
#include "app/classroom/quiz_questions.h"
#include "app/cli/cli.h"
#include "core/checked.h"
#include "core/error.h"
#include "io/printable.h"
#include "show/text_layout.h"

namespace mha {

namespace {

struct QuizOptions {
    std::size_t count = 5;
    std::uint64_t seed = 0;
    std::vector<Topic> topics;  // empty: all of them
    std::string answers_path;   // --answers: grade this file instead of asking
    std::uint64_t pass_percent = 60;
    bool questions_only = false;  // --questions: print a hand-out, ask nothing
    bool help = false;
};

constexpr std::size_t max_questions = 100;

std::vector<Topic> parse_topics(const std::string& text) {
    std::vector<Topic> topics;
    for (const std::string& name : split(text, ',')) {
        bool known = false;
        for (const auto& [topic_name, topic] : topic_names()) {
            if (topic_name == name) {
                topics.push_back(topic);
                known = true;
            }
        }
        if (!known) {
            std::string names;
            for (const auto& entry : topic_names())
                names += (names.empty() ? "" : ", ") + entry.first;
            throw Error("quiz --topics expects a comma-separated list of " + names + ", got '" +
                        name + "'");
        }
    }
    return topics;
}

// mha quiz's options in --help order (adding one: see mha_table in app/cli/cli.cpp).
const std::vector<Option<QuizOptions>>& quiz_table() {
    static const std::vector<Option<QuizOptions>> table = {
        section<QuizOptions>(""),
        {{"--count", 0, "N", "number of questions (default 5, at most 100)"},
         [](QuizOptions& o, const Arg& a) { o.count = parse_count(a, max_questions); }},
        {{"--seed", 0, "S", "which questions (default 0); same seed, same quiz"},
         [](QuizOptions& o, const Arg& a) { o.seed = parse_unsigned(a); }},
        {{"--topics", 0, "LIST",
          "comma-separated, from: shapes, d_k, parameters, macs,\n"
          "kv-cache, copies, rope, window, gradients (the\n"
          "backward's shapes and costs), tokens (GPT-2's\n"
          "pre-tokenizer), serving (paged KV, GQA cache bytes,\n"
          "draft trees, quantised KV, chunked prefill) (default\n"
          "all but tokens and serving, in turn)"},
         [](QuizOptions& o, const Arg& a) { o.topics = parse_topics(a.text); }},
        {{"--answers", 0, "FILE",
          "grade FILE (one answer per line, # comments) instead\nof asking on stdin"},
         [](QuizOptions& o, const Arg& a) { o.answers_path = parse_path(a); }},
        {{"--pass", 0, "PERCENT", "pass mark (default 60)"},
         [](QuizOptions& o, const Arg& a) {
             o.pass_percent = parse_unsigned(a);
             if (o.pass_percent > 100)
                 throw Error(a.option + " is a percentage from 0 to 100, got " + a.text);
         }},
        {{"--questions", 0, "", "print the questions only, as a hand-out"},
         [](QuizOptions& o, const Arg&) { o.questions_only = true; }},
        {{"--help", 'h', "", "this help"}, [](QuizOptions& o, const Arg&) { o.help = true; }},
    };
    return table;
}

const std::vector<Rule<QuizOptions>> quiz_rules = {
    {"questions-answers",
     [](const QuizOptions& o) { return o.questions_only && !o.answers_path.empty(); },
     "quiz --questions prints a hand-out and grades nothing; drop it or --answers"},
};

QuizOptions parse_quiz_args(const std::vector<std::string>& args) {
    QuizOptions o;
    apply_options(quiz_command(), quiz_table(), args, o);
    check_rules(quiz_rules, o);
    if (o.topics.empty()) {
        for (const auto& entry : topic_names()) {
            if (in_default_rotation(entry.second)) o.topics.push_back(entry.second);
        }
    }
    return o;
}

std::string topic_name(Topic topic) {
    for (const auto& [name, t] : topic_names()) {
        if (t == topic) return name;
    }
    return "";
}

void print_question(std::ostream& out, const Question& q, std::size_t number, std::size_t count) {
    out << "Question " << number << " of " << count << " [" << topic_name(q.topic) << "]\n"
        << q.text << "\n";
}

// The verdict and the trace lines that explain the answer.
bool grade(std::ostream& out, const Question& q, const std::string& typed) {
    const bool right = is_right(q, typed);
    if (right)
        out << "right: " << spelled_answer(q) << "\n";
    else
        out << "wrong: you answered '" << sanitized(typed) << "', the answer is "
            << spelled_answer(q) << "\n";
    out << "  why:\n" << indented_lines(q.explanation, "    ");
    return right;
}

enum class Reply { Answer, Skip, Quit, End };

// One line of stdin, like std::getline, refused past max_answers_bytes (so < /dev/zero ends).
bool read_answer_line(std::istream& in, std::string& line) {
    line.clear();
    for (int c = in.get(); c != std::char_traits<char>::eof(); c = in.get()) {
        if (c == '\n') return true;
        if (line.size() == max_answers_bytes) {
            throw Error("quiz: an answer on stdin holds more than " + byte_size(max_answers_bytes) +
                        " without a newline; type one answer per line");
        }
        line += char(c);
    }
    return !line.empty();
}

// Blank lines in a row that a pipe or file may send for one question before its answers
// count as ended: `yes '' | mha quiz` must end, where a terminal's Enter asks again.
constexpr std::size_t max_blank_lines = 16;

// Asks until a line has something on it (Enter alone asks again); "s" or "skip" skips,
// "q" or "quit" quits. The terminal echoes what is typed; other input is echoed here,
// through the terminal's sanitiser.
Reply ask(std::istream& in, bool in_is_terminal, std::ostream& out, std::string& typed) {
    for (std::size_t blank = 0;; ++blank) {
        if (!in_is_terminal && blank == max_blank_lines) return Reply::End;
        out << "> " << std::flush;
        if (!read_answer_line(in, typed)) return Reply::End;
        if (!in_is_terminal) out << sanitized(typed) << "\n";
        if (!typed.empty() && typed.back() == '\r') typed.pop_back();
        const std::size_t first = typed.find_first_not_of(" \t");
        if (first == std::string::npos) continue;
        const std::string word = typed.substr(first, typed.find_last_not_of(" \t") - first + 1);
        if (word == "q" || word == "quit") return Reply::Quit;
        if (word == "s" || word == "skip") return Reply::Skip;
        return Reply::Answer;
    }
}

int score(std::ostream& out, std::size_t right, std::size_t count, std::uint64_t pass_percent) {
    const bool passed = right * 100 >= pass_percent * count;
    out << "score: " << right << "/" << count << " (" << (right * 100 + count / 2) / count << "%), "
        << (passed ? "pass" : "fail") << " (pass mark " << pass_percent << "%)\n";
    return passed ? 0 : 1;
}

}  // namespace

int run_quiz(const std::vector<std::string>& args, std::istream& in, bool in_is_terminal,
             std::ostream& out) {
    const QuizOptions o = parse_quiz_args(args);
    if (o.help) {
        out << help_text(quiz_command());
        return 0;
    }
    const std::vector<std::string> answers =
        o.answers_path.empty() ? std::vector<std::string>() : read_answer_file(o.answers_path);
    const std::vector<Question> questions = make_questions(o.seed, o.count, o.topics);
    std::size_t right = 0;
    for (std::size_t i = 0; i < questions.size(); ++i) {
        if (i > 0) out << "\n";
        print_question(out, questions[i], i + 1, questions.size());
        if (o.questions_only) continue;
        if (i == 0 && o.answers_path.empty() && in_is_terminal) {
            out << "(type the answer and Enter; s skips, q quits)\n";
        }
        std::string typed;
        if (!o.answers_path.empty()) {
            if (i < answers.size()) typed = answers[i];
            out << "> " << sanitized(typed) << "\n";
        } else {
            const Reply got = ask(in, in_is_terminal, out, typed);
            if (got == Reply::End) {
                out << "\n(no more answers)\n";
                break;
            }
            if (got == Reply::Quit) {
                out << "(quit after " << i << " of " << questions.size() << " questions)\n";
                break;
            }
            if (got == Reply::Skip) {
                out << "skipped: the answer is " << spelled_answer(questions[i]) << "\n  why:\n"
                    << indented_lines(questions[i].explanation, "    ");
                continue;
            }
        }
        right += grade(out, questions[i], typed) ? 1 : 0;
    }
    if (o.questions_only) return 0;
    out << "\n";
    return score(out, right, questions.size(), o.pass_percent);
}

const CommandInfo& quiz_command() {
    static const CommandInfo command = command_info<QuizOptions>(
        "quiz", R"(Usage: mha quiz [options]
Questions on shapes and costs, each on its own seeded random configuration.
Every answer is checked against the trace, and the trace lines that explain
it are printed. Answers take the forms people type and the trace prints:
2,4,8,64  (2, 4, 8, 64)  [2 4 8 64]  2x4x8x64  263,168  16 KiB  d_k = 32
step 12. Asked on stdin, Enter alone asks again, s skips, q quits (from a
pipe, 16 blank lines in a row end the answers).
)",
        "Prints the score. Exit status: 0 pass, 1 fail, 2 bad options.\n", "quiz ", quiz_table());
    return command;
}

}  // namespace mha
