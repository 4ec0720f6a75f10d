// `mha grade`: key lines read, each answer checked against the trace of its key line's
// options, the verdict with the expected answer and the trace lines that give it.

#include "app/classroom/grade.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>

#include "app/classroom/answer_form.h"
#include "app/cli/cli.h"
#include "app/run/traced_run.h"
#include "app/tokenize/tokenize_command.h"
#include "core/checked.h"
#include "core/error.h"
#include "io/printable.h"
#include "show/format.h"
#include "show/text_layout.h"
#include "show/tokens.h"

namespace mha {

namespace {

// One line of the key: "shape 4 Q : -b 2 -n 5 -d 48 -H 3 -- why".
struct KeyLine {
    std::size_t line = 0;            // in the key, for messages
    std::vector<std::string> words;  // the kind, then its arguments
    std::string options;             // mha options whose trace gives the answer; may hold {N}
    std::string why;                 // the teacher's explanation, printed under a wrong answer
};

struct Verdict {
    bool right = false;
    std::string answer;             // the expected answer as the trace writes it
    std::string why;                // the trace lines (and arithmetic) that give it
    std::vector<std::size_t> uses;  // the earlier answers ({N}, from 0) the options hold
};

std::vector<std::string> whitespace_separated(const std::string& text) {
    std::istringstream in(text);
    std::vector<std::string> words;
    for (std::string word; in >> word;) words.push_back(word);
    return words;
}

// The key on stdin, refused past max_answers_bytes (so < /dev/zero ends at once).
std::vector<KeyLine> read_key(std::istream& key_in) {
    std::string text(max_answers_bytes + 1, '\0');
    key_in.read(text.data(), std::streamsize(text.size()));
    text.resize(std::size_t(key_in.gcount()));
    if (text.size() > max_answers_bytes) {
        throw Error("grade: the key on stdin holds more than " + byte_size(max_answers_bytes) +
                    ", too long for a key (one line per answer)");
    }
    std::istringstream in(text);
    std::vector<KeyLine> key;
    std::size_t number = 0;
    for (std::string line; std::getline(in, line);) {
        ++number;
        line = trimmed(line);
        if (line.empty() || line[0] == '#') continue;
        KeyLine k;
        k.line = number;
        const std::size_t why = line.find(" -- ");
        if (why != std::string::npos) {
            k.why = trimmed(line.substr(why + 4));
            line.resize(why);
        }
        const std::size_t colon = line.find(" : ");
        if (colon != std::string::npos) {
            k.options = trimmed(line.substr(colon + 3));
            line.resize(colon);
        }
        k.words = whitespace_separated(line);
        key.push_back(k);
    }
    if (key.empty()) throw Error("grade: the key on stdin is empty (see mha grade --help)");
    return key;
}

// The first `count` lines of text.
std::string first_lines(const std::string& text, std::size_t count) {
    std::size_t end = 0;
    for (std::size_t i = 0; i < count && end < text.size(); ++i) {
        end = std::min(text.find('\n', end), text.size()) + 1;
    }
    return text.substr(0, std::min(end, text.size()));
}

class Grader {
public:
    Grader(std::vector<std::string> answers) : answers_(std::move(answers)) {}

    std::string typed(std::size_t index) const {
        return index < answers_.size() ? answers_[index] : "";
    }

    bool answered(std::size_t index) const {
        return index < answers_.size() && !trimmed(answers_[index]).empty();
    }

    Verdict grade(const KeyLine& k, std::size_t index) {
        const std::string& kind = k.words.front();
        const std::string kinds[] = {"shape",    "strides", "contiguous", "copied",
                                     "macs",     "bytes",   "parameters", "d_k",
                                     "kv-cache", "keys",    "matches",    "number",
                                     "word",     "tokens",  "pieces",     "merges",
                                     "page",     "unused",  "cache-bytes"};
        if (std::find(std::begin(kinds), std::end(kinds), kind) == std::end(kinds)) {
            throw Error("grade: key line " + std::to_string(k.line) + ": unknown kind '" + kind +
                        "' (see mha grade --help)");
        }
        const std::string answer = typed(index);
        if (kind == "number" || kind == "word") {
            need_arguments(k, 1);
            Expected e{kind == "word" ? AnswerKind::Word : AnswerKind::Number, {}, k.words[1]};
            if (kind == "number") e.numbers = {number(k, k.words[1])};
            return verdict(e, answer, "");
        }
        std::vector<std::size_t> uses;
        std::optional<std::string> options = substituted(k.options, uses);
        if (!options) {
            return {false, "",
                    "(this one runs mha with an earlier answer, which is not one word)\n", uses};
        }
        if (kind == "tokens" || kind == "pieces" || kind == "merges") {
            Verdict v = tokenize_graded(k, *options, answer);
            v.uses = uses;
            return v;
        }
        const Trace* t = trace_of(k, *options);
        if (t == nullptr) return {false, "", failure_ + "\n", uses};
        Verdict v = graded(k, *t, *options, answer);
        v.uses = uses;
        return v;
    }

private:
    // The verdict on answer from the trace t of the key line's options.
    static Verdict graded(const KeyLine& k, const Trace& t, const std::string& options,
                          const std::string& answer) {
        const std::string& kind = k.words.front();
        if (kind == "matches") return matches(k, t, options, answer);
        if (kind == "parameters") {
            return verdict({AnswerKind::Number, {t.info.parameters}, ""}, answer,
                           t.parameters_line());
        }
        if (kind == "d_k") {
            const RunInfo& i = t.info;
            const std::uint64_t d_k = i.head_dim;
            const std::string split =
                "d_model / h = " + std::to_string(i.d_model) + " / " + std::to_string(i.heads);
            return verdict({AnswerKind::Number, {d_k}, ""}, answer,
                           d_k * i.heads == i.d_model
                               ? "d_k = " + split + " = " + std::to_string(d_k) + "\n"
                               : "d_k = " + std::to_string(d_k) + ", the heads' own width (not " +
                                     split + ")\n");
        }
        if (kind == "kv-cache") {
            const Recorded& key = t.find(StepKind::Project, Operand::K);
            const Recorded& value = t.find(StepKind::Project, Operand::V);
            const std::uint64_t bytes =
                (element_count(key.step.shape) + element_count(value.step.shape)) * sizeof(float);
            return verdict({AnswerKind::Number, {bytes}, ""}, answer,
                           "K and V (steps 2 and 3), 4 bytes a float: " + with_commas(bytes) +
                               " bytes (" + byte_size(bytes) + ")\n" + first_lines(key.text, 2) +
                               first_lines(value.text, 2));
        }
        if (kind == "keys") {
            need_arguments(k, 1);
            return keys(t, number(k, k.words[1]), answer);
        }
        if (kind == "cache-bytes") return cache_bytes(t, answer);
        if (kind == "page" || kind == "unused") {
            need_arguments(k, 1);
            const Recorded& r = paged_write(k, t, number(k, k.words[1]));
            const PagedFacts& paged = *r.step.facts.paged;
            if (kind == "unused")
                return verdict({AnswerKind::Number, {paged.unused_bytes}, ""}, answer, r.text);
            const PagedPosition& at = paged.positions.back();
            return verdict({AnswerKind::SizeList, {at.block, at.slot}, ""}, answer, r.text);
        }
        need_arguments(k, 2);
        const std::string& step = k.words[1];  // "10", or "b10" for the backward's step 10
        const bool backward = step.size() > 1 && step[0] == 'b';
        const Recorded& r =
            t.find(int(number(k, backward ? step.substr(1) : step)), k.words[2], backward);
        const std::string lines = first_lines(r.text, 3);
        if (kind == "shape")
            return verdict({AnswerKind::SizeList, sizes(r.step.shape), ""}, answer, lines);
        if (kind == "strides") {
            std::vector<std::uint64_t> strides(r.step.strides.begin(), r.step.strides.end());
            return verdict({AnswerKind::SizeList, strides, ""}, answer, lines);
        }
        if (kind == "contiguous") {
            return verdict({AnswerKind::Word, {}, r.step.contiguous ? "yes" : "no"}, answer, lines);
        }
        if (kind == "copied")
            return verdict({AnswerKind::Number, {r.step.copied_bytes}, ""}, answer, lines);
        if (kind == "macs") return verdict({AnswerKind::Number, {r.step.macs}, ""}, answer, lines);
        const std::uint64_t floats = element_count(r.step.shape);  // kind "bytes"
        return verdict({AnswerKind::Number, {floats * sizeof(float)}, ""}, answer,
                       lines + "(" + with_commas(floats) + " floats · 4 bytes)\n");
    }

    static std::vector<std::uint64_t> sizes(const Shape& shape) {
        return {shape.begin(), shape.end()};
    }

    static void need_arguments(const KeyLine& k, std::size_t count) {
        if (k.words.size() != count + 1) {
            throw Error("grade: key line " + std::to_string(k.line) + ": '" + k.words.front() +
                        "' takes " + std::to_string(count) + " argument(s) (see mha grade --help)");
        }
    }

    static std::uint64_t number(const KeyLine& k, const std::string& text) {
        const std::optional<std::uint64_t> n = parse_amount(text);
        if (!n) {
            throw Error("grade: key line " + std::to_string(k.line) + ": '" + text +
                        "' is not a whole number");
        }
        return *n;
    }

    static Verdict verdict(const Expected& e, const std::string& typed, const std::string& why) {
        return {answer_matches(e, typed), spelled(e), why, {}};
    }

    // "{1}" becomes answer 1, when that is one word of letters, digits, '.', '_' or '-', or
    // one number with a name ("h = 4" gives 4); uses gets each answer's index.
    std::optional<std::string> substituted(std::string options,
                                           std::vector<std::size_t>& uses) const {
        for (std::size_t open; (open = options.find('{')) != std::string::npos;) {
            const std::size_t close = options.find('}', open);
            const std::string index = options.substr(open + 1, close - open - 1);
            const std::optional<std::uint64_t> n = parse_amount(index);
            if (close == std::string::npos || !n || *n == 0) {
                throw Error("grade: '{" + index + "' in the key: write {N} for answer N");
            }
            uses.push_back(*n - 1);
            const std::optional<std::uint64_t> number = parse_amount(typed(*n - 1));
            const std::string value = number ? std::to_string(*number) : trimmed(typed(*n - 1));
            const bool one_word = !value.empty() && value.find_first_not_of(
                                                        "abcdefghijklmnopqrstuvwxyz"
                                                        "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                        "0123456789._-") == std::string::npos;
            if (!one_word) return std::nullopt;
            options.replace(open, close - open + 1, value);
        }
        return options;
    }

    // The trace of options, run once per distinct options. A key whose own options fail
    // is misuse; options that hold a learner's answer fail as a wrong answer (null).
    const Trace* trace_of(const KeyLine& k, const std::string& options) {
        const auto found = traces_.find(options);
        if (found != traces_.end()) return &found->second;
        try {
            Config config = parse_args(whitespace_separated(options));
            if (!config.model_path.empty()) {
                throw Error(
                    "--model cannot be graded: a key line traces one attention layer; "
                    "give the layer's options (--heads, --d-model, ...) or its --weights");
            }
            config.trace = true;
            config.threads = 1;
            return &traces_.emplace(options, traced(config)).first->second;
        } catch (const Error& error) {
            if (options == k.options) {
                throw Error("grade: key line " + std::to_string(k.line) + ": mha " + options +
                            ": " + error.what());
            }
            failure_ = "mha " + options + ": " + error.what();
            return nullptr;
        }
    }

    // The tokens, pre-tokenizer pieces or merges that `mha tokenize OPTIONS --trace` gives. A key
    // whose own options fail is misuse; options that hold a learner's answer fail as wrong.
    Verdict tokenize_graded(const KeyLine& k, const std::string& options,
                            const std::string& answer) {
        TokenizeFacts facts;
        try {
            facts = tokenize_facts(whitespace_separated(options));
        } catch (const Error& error) {
            const std::string failure = "mha tokenize " + options + ": " + error.what();
            if (options == k.options)
                throw Error("grade: key line " + std::to_string(k.line) + ": " + failure);
            return {false, "", failure + "\n", {}};
        }
        const std::string& kind = k.words.front();
        const std::uint64_t count = kind == "tokens"   ? facts.tokens.size()
                                    : kind == "pieces" ? facts.trace.pieces.size()
                                                       : facts.trace.merges.size();
        std::ostringstream shown;
        print_tokens(shown, facts.text, facts.tokens);
        return verdict({AnswerKind::Number, {count}, ""}, answer,
                       "mha tokenize " + options + " --trace: " + std::to_string(count) + " " +
                           kind + "; its tokens:\n" + shown.str());
    }

    // Right when the run's output has the four statistics of the key, to float32 rounding.
    static Verdict matches(const KeyLine& k, const Trace& t, const std::string& options,
                           const std::string& typed) {
        need_arguments(k, 4);
        const double got[] = {t.output.mean, t.output.std, t.output.min, t.output.max};
        const char* names[] = {"mean", "std", "min", "max"};
        std::string wanted, found;
        bool right = !trimmed(typed).empty();
        for (std::size_t i = 0; i < 4; ++i) {
            const double want = std::stod(k.words[i + 1]);
            right = right && std::fabs(got[i] - want) < 1e-5;
            wanted += std::string(i ? "  " : "") + names[i] + " " + k.words[i + 1];
            found += std::string(i ? "  " : "") + names[i] + " " + fixed(got[i], 6);
        }
        return {right,
                "the one whose output has " + wanted,
                "mha " + options + " gives " + found + "\n",
                {}};
    }

    // The paged cache's step 2 that writes position t of each sequence (the last it writes).
    static const Recorded& paged_write(const KeyLine& k, const Trace& t, std::uint64_t position) {
        for (const Recorded& r : t.steps) {
            const auto& paged = r.step.facts.paged;
            if (paged && paged->positions.back().position == position) return r;
        }
        throw Error("grade: key line " + std::to_string(k.line) + ": no paged cache step writes "
                    "position " + std::to_string(position) + " (the options need --kv-block-size)");
    }

    // The bytes the cache holds after the run's last cached step: K and V in float32, or a
    // quantised cache's codes, scales and zero points and float positions.
    static Verdict cache_bytes(const Trace& t, const std::string& typed) {
        const Recorded* last = nullptr;
        std::uint64_t bytes = 0;
        for (const Recorded& r : t.steps) {
            const StepFacts& f = r.step.facts;
            if (f.quant_error && f.kv_quant) {
                const KvQuantFacts& q = *f.kv_quant;
                bytes = q.code_bytes + q.scale_bytes + q.float_bytes;
            } else if (r.step.kind == StepKind::Cache && f.token) {
                bytes = f.token->cache_bytes;
            } else if (r.step.kind == StepKind::Cache && f.chunk) {
                bytes = f.chunk->cache_bytes;
            } else if (r.step.kind == StepKind::Cache && f.draft) {
                bytes = f.draft->cache_bytes;
            } else {
                continue;
            }
            last = &r;
        }
        if (last == nullptr) return {false, "", "(these options keep no KV cache)\n", {}};
        return verdict({AnswerKind::Number, {bytes}, ""}, typed, last->text);
    }

    static Verdict keys(const Trace& t, std::uint64_t query, const std::string& typed) {
        for (const Recorded& r : t.steps) {
            if (r.step.kind != StepKind::Mask || r.step.allowed.empty()) continue;
            if (query >= r.step.allowed.size()) break;
            std::vector<std::uint64_t> seen;
            for (std::size_t key = 0; key < r.step.allowed[query].size(); ++key) {
                if (r.step.allowed[query][key]) seen.push_back(key);
            }
            return verdict({AnswerKind::StepList, seen, ""}, typed, r.text);
        }
        throw Error("the trace draws no mask grid with a query " + std::to_string(query));
    }

    std::vector<std::string> answers_;
    std::map<std::string, Trace> traces_;
    std::string failure_;
};

struct GradeOptions {
    std::string files_in;  // --files-in: the key's file names are relative to it
    bool help = false;
};

// mha grade's options in --help order (adding one: see mha_table in app/cli/cli.cpp).
const std::vector<Option<GradeOptions>>& grade_table() {
    static const std::vector<Option<GradeOptions>> table = {
        section<GradeOptions>(""),
        {{"--files-in", 0, "DIR", "file names in the key's options are relative to DIR"},
         [](GradeOptions& o, const Arg& a) { o.files_in = parse_path(a); }},
        {{"--help", 'h', "", "this help"}, [](GradeOptions& o, const Arg&) { o.help = true; }},
    };
    return table;
}

}  // namespace

int run_grade(const std::vector<std::string>& args, std::istream& key_in, std::ostream& out) {
    // ANSWERS comes first; the options after it go through the table.
    const bool has_answers = !args.empty() && args[0].rfind("-", 0) != 0;
    GradeOptions o;
    apply_options(grade_command(), grade_table(),
                  {args.begin() + (has_answers ? 1 : 0), args.end()}, o);
    if (o.help) {
        out << help_text(grade_command());
        return 0;
    }
    if (!has_answers) {
        throw Error(
            "grade needs an answers file first (usage: mha grade ANSWERS [--files-in DIR] < KEY)");
    }
    const std::string& answers_path = args[0];
    const std::string& files_in = o.files_in;
    Grader grader(read_answer_file(answers_path));
    const std::vector<KeyLine> key = read_key(key_in);
    if (!files_in.empty()) {
        std::error_code failed;
        std::filesystem::current_path(files_in, failed);
        if (failed) throw Error("grade --files-in: cannot enter '" + files_in + "'");
    }
    std::vector<Verdict> verdicts;  // all first: a bad key line prints no grade at all
    for (std::size_t i = 0; i < key.size(); ++i) {
        try {
            verdicts.push_back(grader.grade(key[i], i));
        } catch (const Error& error) {
            const std::string message = error.what();
            if (message.rfind("grade", 0) == 0) throw;
            throw Error("grade: key line " + std::to_string(key[i].line) + ": " + message);
        }
    }
    std::size_t right = 0, followed = 0;
    for (std::size_t i = 0; i < key.size(); ++i) {
        const Verdict& v = verdicts[i];
        const std::string number = std::to_string(i + 1) + ". ";
        // the other wrong answers this one was computed from ({N}): "your answers to questions
        // 1 and 2, which are wrong"
        std::string numbers;
        std::size_t wrong_used = 0;
        for (std::size_t used : v.uses) {
            if (used != i && used < verdicts.size() && !verdicts[used].right) {
                numbers += (numbers.empty() ? "" : " and ") + std::to_string(used + 1);
                ++wrong_used;
            }
        }
        const std::string from = numbers.empty() ? ""
                                 : wrong_used == 1
                                     ? "your answer to question " + numbers + ", which is wrong"
                                     : "your answers to questions " + numbers + ", which are wrong";
        if (v.right) {
            ++right;
            // right only given an earlier wrong answer: follow-through credit, said as such
            if (from.empty()) {
                out << number << "right: " << v.answer << "\n";
                continue;
            }
            ++followed;
            out << number << "right as follow-through: " << v.answer << " follows from " << from
                << "\n";
            continue;
        }
        if (grader.answered(i)) {
            out << number << "wrong: you answered '" << sanitized(grader.typed(i)) << "'";
        } else {
            out << number << "wrong: no answer";
        }
        if (!v.answer.empty()) out << ", the answer is " << v.answer;
        if (!v.answer.empty() && !from.empty()) {
            out << " given " << from;
        }
        out << "\n";
        if (!key[i].why.empty()) out << "   " << sanitized(key[i].why) << "\n";
        out << indented_lines(v.why, "   | ");
    }
    out << "score: " << right << "/" << key.size();
    if (followed > 0) out << " (" << followed << " of them as follow-through)";
    out << "\n";
    return right == key.size() ? 0 : 1;
}

const CommandInfo& grade_command() {
    static const CommandInfo command = command_info<GradeOptions>(
        "grade", R"(Usage: mha grade ANSWERS [--files-in DIR] < KEY
Grades ANSWERS (one answer per line, # comments) against KEY on stdin, one
key line per answer. Answers take the forms the trace prints: (2, 4, 8, 64),
263,168, 4 MiB, 4x, d_k = 32, step 12, keys 0..2, yes (or true). A wrong
answer is shown with the expected one and the trace lines that give it; a
missing one as "no answer". An answer that is right only given an earlier
wrong one it was computed from ({N}) counts, labelled "right as follow-through".

Key lines, KIND [ARGS] [: MHA-OPTIONS] [-- EXPLANATION]:
  shape STEP TENSOR : OPTS     the tensor's sizes after that step
  strides STEP TENSOR : OPTS   its strides
  contiguous STEP TENSOR : OPTS  yes or no
  copied STEP TENSOR : OPTS    bytes the step copied
  macs STEP TENSOR : OPTS      its multiply-adds
  bytes STEP TENSOR : OPTS     its size in float32 bytes
  parameters : OPTS            the layer's parameters
  d_k : OPTS                   d_model / h
  kv-cache : OPTS              bytes of K and V (steps 2 and 3)
  keys QUERY : OPTS            the keys QUERY sees after the mask (step 8)
  cache-bytes : OPTS           bytes a cached form's KV cache holds at the end
                               (--kv-quant: codes, scales, zero points)
  page T : OPTS                block and slot of position T of sequence 0
                               (--kv-block-size)
  unused T : OPTS              bytes allocated, not written once T is written
  matches MEAN STD MIN MAX : OPTS  right when the run's output has these
                               statistics; OPTS hold the answer as {N}
  tokens : TOKENIZE-OPTS       the tokens mha tokenize TOKENIZE-OPTS gives
  pieces : TOKENIZE-OPTS       the pre-tokenizer's pieces (its --trace)
  merges : TOKENIZE-OPTS       the merges applied (its --trace)
  number VALUE                 a fixed number
  word WORD                    a fixed word (case does not matter)
STEP is a number, or bN for the backward's step N (OPTS hold --backward).
{N} in OPTS stands for answer N (one word), e.g. --heads {1}.
)",
        R"(Prints one verdict per answer and "score: right/asked". Exit status: 0 when
every answer is right, 1 when one is wrong, 2 on misuse (no answers file, a
bad key line).
)",
        "grade ", grade_table());
    return command;
}

}  // namespace mha
