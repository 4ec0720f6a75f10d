#pragma once
// The quiz's questions. Each one gets its own seeded random configuration, runs
// the real forward pass on it with a tracer, and takes its answer and its
// explanation from the trace, so a question can never disagree with the tool.

#include <cstdint>
#include <string>
#include <vector>

#include "app/classroom/answer_form.h"

namespace mha {

enum class Topic { Shapes, DK, Parameters, Macs, KvCache, Copies, Rope, Window, Gradients, Tokens };

// "shapes", "d_k", "parameters", "macs", "kv-cache", "copies", "rope", "window", "gradients",
// "tokens", in that order.
const std::vector<std::pair<std::string, Topic>>& topic_names();

// Whether a quiz without --topics asks about it (tokens is asked for by name only).
bool in_default_rotation(Topic topic);

struct Question {
    Topic topic;
    std::string text;  // the configuration and the question
    AnswerKind kind;
    std::vector<std::uint64_t> answer;  // one number, the sizes, or step numbers in order
    std::string explanation;            // the trace lines and arithmetic that give the answer
};

// count questions, question i on topics[i % topics.size()], all drawn from seed.
std::vector<Question> make_questions(std::uint64_t seed, std::size_t count,
                                     const std::vector<Topic>& topics);

// The answer the way the trace writes it: "(2, 4, 8, 64)", "16,384", "12".
std::string spelled_answer(const Question& question);

// Whether typed (as a learner types it, see app/classroom/answer_form.h) is the answer.
bool is_right(const Question& question, const std::string& typed);

}  // namespace mha
