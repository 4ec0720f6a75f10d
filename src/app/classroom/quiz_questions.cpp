// Quiz questions from traced runs: draw a configuration, run forward() with a
// recorder, read the answer off the recorded steps.

#include "app/classroom/quiz_questions.h"

#include <algorithm>
#include <random>

#include "app/classroom/answer_form.h"
#include "app/classroom/serving_questions.h"
#include "app/run/traced_run.h"
#include "core/checked.h"
#include "core/error.h"
#include "core/position/rope.h"
#include "io/printable.h"
#include "show/format.h"
#include "tokenize/byte_level.h"
#include "tokenize/patterns.h"

namespace mha {

namespace {

using Random = std::mt19937_64;

// Small enough to run in a moment, varied enough that no two questions look alike.
Config draw_config(Random& random) {
    const std::size_t heads[] = {1, 2, 4, 8};
    const std::size_t head_widths[] = {4, 8, 16, 32, 64};
    Config c;
    c.batch = draw(random, 1, 4);
    c.seq_len = draw(random, 2, 12);
    c.kv_len = draw(random, 0, 2) == 0 ? draw(random, 2, 12) : *c.seq_len;
    c.heads = heads[draw(random, 0, 3)];
    c.d_model = *c.heads * head_widths[draw(random, 0, 4)];
    c.bias = draw(random, 0, 1) == 0;
    c.threads = 1;
    c.trace = true;
    return c;
}

// "B=2, N=6, M=6, d_model=64, h=4; self-attention with bias". No d_k: that can be a question.
std::string described(const RunInfo& info) {
    const bool shared = info.kv_heads != 0 && info.kv_heads < info.heads;
    return "B=" + std::to_string(info.batch) + ", N=" + std::to_string(info.seq_len) +
           ", M=" + std::to_string(info.kv_len) + ", d_model=" + std::to_string(info.d_model) +
           ", h=" + std::to_string(info.heads) +
           (shared ? ", G=" + std::to_string(info.kv_heads) + " K/V heads" : "") + "; " +
           (info.self_attention ? "self-attention" : "cross-attention") +
           (info.bias ? " with bias" : " without bias");
}

std::string step_label(const Step& step) {
    return "step " + std::to_string(step.number) + ", " + step.expression;
}

Question shapes_question(Random& random, const Trace& t) {
    std::vector<const Recorded*> candidates;
    for (const Recorded& r : t.steps) {
        if (r.step.kind != StepKind::Input) candidates.push_back(&r);
    }
    const Recorded& chosen = *candidates[draw(random, 0, candidates.size() - 1)];
    return {Topic::Shapes,
            "After " + step_label(chosen.step) + ":\nwhat is the shape of " + chosen.step.tensor +
                "? Give the sizes in order.",
            AnswerKind::SizeList,
            {chosen.step.shape.begin(), chosen.step.shape.end()},
            chosen.text};
}

Question d_k_question(const Trace& t) {
    const std::uint64_t d_k = t.info.d_model / t.info.heads;
    return {Topic::DK,
            "What is d_k, the width of one head?",
            AnswerKind::Number,
            {d_k},
            "d_k = d_model / h = " + std::to_string(t.info.d_model) + " / " +
                std::to_string(t.info.heads) + " = " + std::to_string(d_k) + "\n" +
                t.find(StepKind::SplitHeads, Operand::Q).text};
}

Question parameters_question(const Trace& t) {
    const std::string count_line = t.parameters_line();
    return {Topic::Parameters,
            "How many parameters (weights and biases) does the layer have?",
            AnswerKind::Number,
            {t.info.parameters},
            "W_q, W_k, W_v and W_o are (d_model, d_model) each" +
                std::string(t.info.bias ? ", plus four biases of d_model" : ", no biases") + ":\n" +
                count_line};
}

Question macs_question(Random& random, const Trace& t) {
    const std::pair<StepKind, Operand> choices[] = {
        {StepKind::Project, Operand::Q},    {StepKind::Project, Operand::K},
        {StepKind::Project, Operand::V},    {StepKind::Scores, Operand::None},
        {StepKind::Context, Operand::None}, {StepKind::OutputProject, Operand::None}};
    const auto [kind, operand] = choices[draw(random, 0, 5)];
    const Recorded& r = t.find(kind, operand);
    const RunInfo& i = t.info;
    const std::uint64_t d_k = i.d_model / i.heads;
    std::string formula;
    if (kind == StepKind::Scores || kind == StepKind::Context) {
        formula = "B·h·N·M·d_k = " + product({i.batch, i.heads, i.seq_len, i.kv_len, d_k});
    } else {
        const bool keys = operand == Operand::K || operand == Operand::V;
        formula = std::string(keys ? "B·M" : "B·N") + "·d_model·d_model = " +
                  product({i.batch, keys ? i.kv_len : i.seq_len, i.d_model, i.d_model});
    }
    return {Topic::Macs,
            "For " + step_label(r.step) + ":\nhow many multiply-adds does it take?",
            AnswerKind::Number,
            {r.step.macs},
            formula + "\n" + r.text};
}

Question kv_cache_question(const Trace& t) {
    const Recorded& k = t.find(StepKind::Project, Operand::K);
    const Recorded& v = t.find(StepKind::Project, Operand::V);
    const std::uint64_t elements = element_count(k.step.shape);
    const std::uint64_t bytes = 2 * elements * sizeof(float);
    return {
        Topic::KvCache,
        "Generating token by token, a KV cache keeps K and V (steps 2 and 3) for all\n"
        "M positions in float32. How many bytes does it hold for this layer?",
        AnswerKind::Number,
        {bytes},
        "K and V are (B, M, d_model): " + product({t.info.batch, t.info.kv_len, t.info.d_model}) +
            " floats each;\n" + "2 tensors · " + with_commas(elements) + " floats · 4 bytes = " +
            with_commas(bytes) + " bytes (" + byte_size(bytes) + ")\n" + k.text + v.text};
}

Question copies_question(const Trace& t) {
    std::vector<std::uint64_t> copying;
    std::string lines;
    for (const Recorded& r : t.steps) {
        if (r.step.copied_bytes == 0) continue;
        copying.push_back(std::uint64_t(r.step.number));
        lines += r.text;
    }
    return {Topic::Copies,
            "Which steps copy memory only to change its layout?\nGive the step numbers, or none.",
            AnswerKind::StepList, copying,
            "view (4, 13) and transpose (5, 11) only change strides; contiguous() copies\n"
            "when the strides are not row-major:\n" +
                lines};
}

// RoPE: which feature turns together with a given one, read off the rope step of the trace.
Question rope_question(Random& random, Config c) {
    c.kv_len = c.seq_len;  // RoPE places the queries at the last N of M positions
    c.rope = draw(random, 0, 1) == 0 ? RopeLayout::Half : RopeLayout::Interleaved;
    const Trace t = traced(c);
    const Recorded* rope = nullptr;  // step 5 on Q is the transpose, then the rotation
    for (const Recorded& s : t.steps) {
        if (s.step.kind == StepKind::Rope && s.step.operand == Operand::Q) rope = &s;
    }
    if (rope == nullptr) throw Error("quiz: the trace has no rope step");
    const std::size_t d_k = rope->step.shape.back();
    const bool half = *c.rope == RopeLayout::Half;
    const std::size_t feature = draw(random, 0, d_k - 1);
    const std::size_t i = half ? feature % (d_k / 2) : feature / 2;
    const auto [a, b] = rope_pair(*c.rope, d_k, i);
    const std::size_t partner = feature == a ? b : a;
    Question q{Topic::Rope,
               std::string("With --rope ") + (half ? "half" : "interleaved") +
                   " (d_k = " + std::to_string(d_k) + "), feature " + std::to_string(feature) +
                   " of each head's q and k turns together with which feature?",
               AnswerKind::Number,
               {partner},
               std::string(half ? "half pairs (x[i], x[i + d_k/2])"
                                : "interleaved pairs (x[2i], x[2i+1])") +
                   ": feature " + std::to_string(feature) + " is in pair " + std::to_string(i) +
                   " = (" + std::to_string(a) + ", " + std::to_string(b) + ")\n" + rope->text};
    q.text = described(t.info) + ".\n" + q.text;
    return q;
}

// The sliding window: how many keys one query sees, counted in the mask grid of step 8.
Question window_question(Random& random, Config c) {
    c.kv_len = c.seq_len;
    c.scores.window = draw(random, 1, 4);
    const Trace t = traced(c);
    const Recorded& mask = t.find(StepKind::Mask);
    const std::size_t row = draw(random, 0, mask.step.allowed.size() - 1);
    const std::vector<bool>& keys = mask.step.allowed[row];
    const std::uint64_t seen = std::uint64_t(std::count(keys.begin(), keys.end(), true));
    Question q{Topic::Window,
               "With --window " + std::to_string(c.scores.window) + ", how many keys does query " +
                   std::to_string(row) + " attend to?",
               AnswerKind::Number,
               {seen},
               "query p sees keys p - W < j <= p: min(p + 1, W) = min(" + std::to_string(row + 1) +
                   ", " + std::to_string(c.scores.window) + ") = " + std::to_string(seen) + "\n" +
                   mask.text};
    q.text = described(t.info) + ".\n" + q.text;
    return q;
}

// What a gradient's shape follows from, by the kind of the backward step that makes it.
std::string gradient_shape_rule(StepKind kind) {
    switch (kind) {
        case StepKind::ValueGrad:
            return "dV = Pᵀ dO_h: (M, N) @ (N, d_k) for every (batch, head), V's own shape";
        case StepKind::WeightsGrad:
            return "dP = dO_h Vᵀ: (N, d_k) @ (d_k, M) for every (batch, head), P's own shape";
        case StepKind::RowDot:
            return "D = rowsum(dO_h ∘ O_h): one number per query row of every (batch, head)";
        case StepKind::SoftmaxGrad:
            return "dS = P ∘ (dP − D): elementwise, so P's own shape";
        case StepKind::QueryGrad:
            return "dQ = dscores K: (N, M) @ (M, d_k) for every (batch, head), Q's own shape";
        case StepKind::KeyGrad:
            return "dK = dscoresᵀ Q: (M, N) @ (N, d_k) for every (batch, query head)";
        case StepKind::GroupSum:
            return "each of the G K/V heads adds the gradients of the h/G query heads that\n"
                   "read it: the shape of the shared K or V";
        case StepKind::InputGrad:
            return "dx = dY W: the gradient has the shape of the input the projection read";
        default:  // StepKind::WeightGrad
            return "a weight's gradient has the weight's own shape (out, in), summed over the\n"
                   "batch and the positions";
    }
}

// What one entry of a backward step's output costs, by the step's kind.
std::string per_entry(StepKind kind) {
    switch (kind) {
        case StepKind::ValueGrad:
        case StepKind::KeyGrad:
            return "a sum over the N queries";
        case StepKind::WeightsGrad:
        case StepKind::RowDot:
            return "a sum over the d_k features of a head";
        case StepKind::QueryGrad:
            return "a sum over the M keys";
        case StepKind::SoftmaxGrad:
            return "one multiply (elementwise)";
        case StepKind::WeightGrad:
            return "a sum over the batch and the positions";
        default:  // StepKind::InputGrad
            return "a sum over the projection's output features";
    }
}

// The backward of a traced --backward run: a gradient's shape, a backward step's
// multiply-adds, or with GQA how many query heads' gradients a shared K/V head's dK or dV adds.
Question gradients_question(Random& random, Config c) {
    c.backward = true;
    if (*c.heads > 1 && draw(random, 0, 1) == 0) {  // GQA: G = h/2, or MQA
        c.kv_heads = draw(random, 0, 1) == 0 ? 1 : *c.heads / 2;
    }
    const Trace t = traced(c);
    const StepKind kinds[] = {StepKind::ValueGrad,   StepKind::WeightsGrad, StepKind::RowDot,
                              StepKind::SoftmaxGrad, StepKind::QueryGrad,   StepKind::KeyGrad,
                              StepKind::GroupSum,    StepKind::WeightGrad,  StepKind::InputGrad};
    std::vector<const Recorded*> shaped, costly, sums;
    for (const Recorded& r : t.steps) {
        if (!r.step.backward ||
            std::find(std::begin(kinds), std::end(kinds), r.step.kind) == std::end(kinds))
            continue;
        shaped.push_back(&r);
        if (r.step.macs > 0) costly.push_back(&r);
        if (r.step.kind == StepKind::GroupSum) sums.push_back(&r);
    }
    Question q{Topic::Gradients, "", AnswerKind::Number, {}, ""};
    const std::size_t choice = draw(random, 0, sums.empty() ? 1 : 2);
    if (choice == 2) {
        const Recorded& sum = *sums[draw(random, 0, sums.size() - 1)];
        const std::size_t summed = sum.step.facts.summed_heads;
        q.text =
            "The forward repeats each K/V head for the query heads of its group. In the\n"
            "backward, step b" +
            std::to_string(sum.step.number) + ", " + sum.step.expression +
            ":\nhow many query heads' gradients does each K/V head's " + sum.step.tensor +
            " add up?";
        q.answer = {summed};
        q.explanation = "h / G = " + std::to_string(t.info.heads) + " / " +
                        std::to_string(t.info.kv_heads) + " = " + std::to_string(summed) +
                        ": the adjoint of a repeat is a sum over the copies\n" + sum.text;
    } else if (choice == 1) {
        const Recorded& r = *costly[draw(random, 0, costly.size() - 1)];
        const std::uint64_t entries = element_count(r.step.shape);
        q.text = "With --backward, how many multiply-adds does this backward step take?\nstep b" +
                 std::to_string(r.step.number) + ", " + r.step.expression;
        q.answer = {r.step.macs};
        q.explanation = r.step.tensor + " has " + with_commas(entries) + " entries, each " +
                        per_entry(r.step.kind) + ": " + product({entries, r.step.macs / entries}) +
                        "\n" + r.text;
    } else {
        const Recorded& r = *shaped[draw(random, 0, shaped.size() - 1)];
        q.text = "With --backward, after step b" + std::to_string(r.step.number) + ", " +
                 r.step.expression + ":\nwhat is the shape of " + r.step.tensor +
                 "? Give the sizes in order.";
        q.kind = AnswerKind::SizeList;
        q.answer = {r.step.shape.begin(), r.step.shape.end()};
        q.explanation = gradient_shape_rule(r.step.kind) + "\n" + r.text;
    }
    q.text = described(t.info) + ".\n" + q.text;
    return q;
}

// A short text of words that show GPT-2's pattern at work: contractions in either case, letters
// with accents, digit runs, other scripts, an emoji, runs of spaces and newlines.
std::string draw_text(Random& random) {
    static const char* const words[] = {
        "Hello",        "world",   "it's", "don't",       "we'll",      "THEY'RE",
        "na\u00efve",   "1234567", "2024", "\U0001F999s", "\u03A9mega", "\u041C\u0438\u0440",
        "\u4E2D\u6587", "!!!",     "..."};
    static const char* const gaps[] = {" ", " ", " ", "  ", "   ", "\n", " \n"};
    const std::size_t word_count = sizeof words / sizeof words[0];
    const std::size_t gap_count = sizeof gaps / sizeof gaps[0];
    std::string text = words[draw(random, 0, word_count - 1)];
    for (std::size_t n = draw(random, 2, 4); n > 1; --n)
        text += std::string(gaps[draw(random, 0, gap_count - 1)]) +
                words[draw(random, 0, word_count - 1)];
    return text;
}

// "  \"Hello\"  / ?\p{L}+/" for each piece
std::string pieces_listed(const std::string& text,
                          const std::vector<tokenizers::PatternPiece>& pieces) {
    std::string lines;
    for (const tokenizers::PatternPiece& p : pieces) {
        lines += "  \"" + escaped(text.substr(p.begin, p.end - p.begin)) + "\"  branch /" +
                 p.branch + "/\n";
    }
    return lines;
}

// GPT-2's pre-tokenizer, the step before any merge: how many pieces its pattern cuts a text
// into, or how many byte symbols one piece starts as. The answer is the tool's own matcher's.
Question tokens_question(Random& random) {
    const std::string text = draw_text(random);
    const auto pieces = tokenizers::match_pattern(tokenizers::Pattern::gpt2, text);
    const std::string intro = std::string("GPT-2's pre-tokenizer cuts text with the pattern\n  ") +
                              tokenizers::pattern_text(tokenizers::Pattern::gpt2) +
                              "\n(each branch tried in order at each position).\n";
    const std::string quoted = "\"" + escaped(text) + "\"";
    if (draw(random, 0, 1) == 0) {
        return {Topic::Tokens,
                intro + "Into how many pieces does it cut " + quoted + "?",
                AnswerKind::Number,
                {pieces.size()},
                std::to_string(pieces.size()) + " pieces:\n" + pieces_listed(text, pieces) +
                    "(see mha tokenize --trace, docs/tokenizers.md)"};
    }
    const std::size_t k = draw(random, 0, pieces.size() - 1);
    const tokenizers::PatternPiece& piece = pieces[k];
    std::string bytes, symbols;
    for (std::size_t at = piece.begin; at < piece.end; ++at) {
        const auto b = static_cast<std::uint8_t>(text[at]);
        const char* hex = "0123456789ABCDEF";
        bytes += std::string(bytes.empty() ? "" : " ") + hex[b >> 4] + hex[b & 15];
        symbols += tokenizers::byte_symbol(b);
    }
    return {Topic::Tokens,
            intro + "It cuts " + quoted + " into " + std::to_string(pieces.size()) +
                " pieces; piece " + std::to_string(k) + " is \"" +
                escaped(text.substr(piece.begin, piece.end - piece.begin)) +
                "\". How many byte-level symbols does that piece start as, before any merge?",
            AnswerKind::Number,
            {piece.end - piece.begin},
            "one symbol per UTF-8 byte: " + bytes + "  ->  " + symbols + "\n" +
                pieces_listed(text, pieces)};
}

Question question_on(Topic topic, Random& random) {
    if (topic == Topic::Tokens) return tokens_question(random);
    if (topic == Topic::Serving) return serving_question(random);
    if (topic == Topic::Rope) return rope_question(random, draw_config(random));
    if (topic == Topic::Window) return window_question(random, draw_config(random));
    if (topic == Topic::Gradients) return gradients_question(random, draw_config(random));
    const Trace t = traced(draw_config(random));
    Question q = [&] {
        switch (topic) {
            case Topic::Shapes:
                return shapes_question(random, t);
            case Topic::DK:
                return d_k_question(t);
            case Topic::Parameters:
                return parameters_question(t);
            case Topic::Macs:
                return macs_question(random, t);
            case Topic::KvCache:
                return kv_cache_question(t);
            case Topic::Copies:
            case Topic::Rope:
            case Topic::Window:
            case Topic::Gradients:
            case Topic::Tokens:
            case Topic::Serving:
                break;
        }
        return copies_question(t);
    }();
    q.text = described(t.info) + ".\n" + q.text;
    return q;
}

}  // namespace

std::size_t draw(Random& random, std::size_t low, std::size_t high) {
    return low + std::size_t(random() % (high - low + 1));
}

std::string product(const std::vector<std::uint64_t>& factors) {
    std::string text;
    std::uint64_t result = 1;
    for (std::uint64_t f : factors) {
        text += (text.empty() ? "" : "·") + std::to_string(f);
        result *= f;
    }
    return text + " = " + with_commas(result);
}

const std::vector<std::pair<std::string, Topic>>& topic_names() {
    static const std::vector<std::pair<std::string, Topic>> names = {
        {"shapes", Topic::Shapes}, {"d_k", Topic::DK},           {"parameters", Topic::Parameters},
        {"macs", Topic::Macs},     {"kv-cache", Topic::KvCache}, {"copies", Topic::Copies},
        {"rope", Topic::Rope},     {"window", Topic::Window},    {"gradients", Topic::Gradients},
        {"tokens", Topic::Tokens}, {"serving", Topic::Serving}};
    return names;
}

bool in_default_rotation(Topic topic) { return topic != Topic::Tokens && topic != Topic::Serving; }

std::vector<Question> make_questions(std::uint64_t seed, std::size_t count,
                                     const std::vector<Topic>& topics) {
    Random random(seed);
    std::vector<Question> questions;
    for (std::size_t i = 0; i < count; ++i) {
        questions.push_back(question_on(topics[i % topics.size()], random));
    }
    return questions;
}

std::string spelled_answer(const Question& q) { return spelled({q.kind, q.answer, ""}); }

bool is_right(const Question& q, const std::string& typed) {
    return answer_matches({q.kind, q.answer, ""}, typed);
}

}  // namespace mha
