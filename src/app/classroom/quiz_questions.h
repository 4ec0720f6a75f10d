#pragma once
// The quiz's questions. Each one gets its own seeded random configuration, runs
// the real forward pass on it with a tracer, and takes its answer and its
// explanation from the trace, so a question can never disagree with the tool.

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "app/classroom/answer_form.h"

namespace mha {

enum class Topic {
    Shapes,
    DK,
    Parameters,
    Macs,
    KvCache,
    Copies,
    Rope,
    Window,
    Gradients,
    Tokens,
    Serving
};

// "shapes", "d_k", "parameters", "macs", "kv-cache", "copies", "rope", "window", "gradients",
// "tokens", "serving", in that order.
const std::vector<std::pair<std::string, Topic>>& topic_names();

// Whether a quiz without --topics asks about it (tokens and serving are asked for by name
// only, so that a seed asks what it asked before they came).
bool in_default_rotation(Topic topic);

struct Question {
    Topic topic;
    std::string text;  // the configuration and the question
    AnswerKind kind;
    std::vector<std::uint64_t> answer;  // one number, the sizes, or step numbers in order
    std::string explanation;            // the trace lines and arithmetic that give the answer
};

// A whole number in [low, high]; the modulo of mt19937_64's bits is the same everywhere.
std::size_t draw(std::mt19937_64& random, std::size_t low, std::size_t high);

// The factors and their product as an explanation writes them: "2·6·64·64 = 49,152".
std::string product(const std::vector<std::uint64_t>& factors);

// count questions, question i on topics[i % topics.size()], all drawn from seed.
std::vector<Question> make_questions(std::uint64_t seed, std::size_t count,
                                     const std::vector<Topic>& topics);

// The answer the way the trace writes it: "(2, 4, 8, 64)", "16,384", "12".
std::string spelled_answer(const Question& question);

// Whether typed (as a learner types it, see app/classroom/answer_form.h) is the answer.
bool is_right(const Question& question, const std::string& typed);

}  // namespace mha
