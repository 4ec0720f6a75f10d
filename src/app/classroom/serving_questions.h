#pragma once
// The quiz's `serving` topic (asked only through --topics serving): how a serving engine lays
// out attention. Each question traces a decode-lab run (paged KV, a GQA cache, a draft tree,
// a quantised cache, chunked prefill) and reads its answer off the trace's own facts.

#include <random>

#include "app/classroom/quiz_questions.h"

namespace mha {

// One question, its kind and its configuration drawn from random.
Question serving_question(std::mt19937_64& random);

}  // namespace mha
