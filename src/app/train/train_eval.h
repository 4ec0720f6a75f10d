#pragma once
// mha train's evaluation: the held-out loss on a fixed batch, every head's previous-token
// score on held-out prose and induction score on random lowercase segments written twice
// (show/head_roles.h, as examples/models/train.py measures them while it trains), and every
// layer's weights on a fixed probe text for the panel's heatmaps.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "app/train/train_data.h"
#include "core/forms/model.h"
#include "show/train_panel.h"

namespace mha {

inline constexpr std::size_t held_out_rows = 16;    // windows of --context characters
inline constexpr std::size_t role_samples = 8;      // prose windows, and segments
inline constexpr std::size_t prose_length = 96;     // characters per prose window
inline constexpr std::size_t segment_letters = 24;  // written twice
// train.py's fixture text: prose with a random word repeated, for previous-token and
// induction heads alike
inline constexpr const char* probe_text =
    "The password is qxvbtmrkalzwpfjh. Again: the password is qxvbtmrkalzwpfjh.";

// A text as the model reads it: one token and one UTF-8 character per position.
struct TokenText {
    std::vector<std::size_t> tokens;      // (N)
    std::vector<std::string> characters;  // (N)
};

// Everything an evaluation reads, fixed for a run: drawn once from (seed) and the corpus,
// each text at most `context` characters.
struct EvaluationTexts {
    Batch held_out;                   // held_out_rows rows of context tokens
    std::vector<TokenText> prose;     // role_samples held-out windows
    std::vector<TokenText> segments;  // role_samples random segments written twice
    TokenText probe;                  // probe_text in the corpus's vocabulary
};

EvaluationTexts evaluation_texts(const Corpus& corpus, std::uint64_t seed, std::size_t context);

struct Evaluated {
    TrainEvaluation evaluation;         // step, seconds and loss left for the caller
    std::vector<Tensor> probe_weights;  // per layer: (1, h, N, N) on the probe
};

// Every layer's weights on the probe, per layer (1, h, N, N).
std::vector<Tensor> probe_weights(const Model& model, const EvaluationTexts& texts,
                                  std::size_t threads);

// The held-out loss (the mean cross-entropy of the rows, each read alone), the mean scores
// per head (a text where a head's score is undefined left out), and the probe's weights.
Evaluated evaluate(const Model& model, const EvaluationTexts& texts, std::size_t threads);

}  // namespace mha
