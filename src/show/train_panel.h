#pragma once
// What `mha train` shows while it trains: the live panel (redrawn in place on a terminal) and
// the plain progress line (without a terminal, or with NO_COLOR). Pure text; the terminal
// handling is app/'s.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor/tensor.h"

namespace mha {

// One evaluation: the losses and every head's two scores (examples/models/README.md).
struct TrainEvaluation {
    std::size_t step = 0;
    double seconds = 0.0;   // since training started
    double loss = 0.0;      // training loss: the mean of the steps since the last evaluation
    double val_loss = 0.0;  // held-out loss
    std::vector<std::vector<double>> prev_token;  // [layer][head] on held-out prose
    std::vector<std::vector<double>> induction;   // [layer][head] on repeated random segments
};

// The moment the induction score jumped: the first evaluation whose best induction score (any
// layer after the first) reaches `formed_at`, and the training loss at the last evaluation
// before the rise began (best induction below `rise_from`) against the loss at that moment.
struct InductionFormed {
    std::size_t step = 0;
    double loss_before = 0.0;
    double loss_after = 0.0;
};
inline constexpr double induction_rise_from = 0.1;
inline constexpr double induction_formed_at = 0.3;
std::optional<InductionFormed> induction_formed(const std::vector<TrainEvaluation>& history);

// Everything the panel draws.
struct TrainSnapshot {
    std::size_t step = 0, steps = 0;        // taken so far, planned
    double seconds = 0.0;                    // elapsed
    double eta_seconds = 0.0;                // estimated time to the last step (or time limit)
    std::vector<double> step_losses;         // every step's training loss so far
    std::vector<TrainEvaluation> history;    // every evaluation so far, oldest first
    std::string probe;                       // the fixed probe text, as UTF-8
    std::vector<std::string> probe_characters;  // (N) the probe, one UTF-8 character each
    std::vector<Tensor> probe_weights;       // per layer: (1, h, N, N) weights on the probe
};

// The panel as lines, each at most `width` columns (ANSI colour only when `color`), at most
// `height` lines; width ≥ 80 and height ≥ 24 draw everything, smaller sizes drop the heatmaps.
// Without `color` the sparklines, bars and heatmaps are plain ASCII (show/heatmap's ramp).
std::vector<std::string> train_panel(const TrainSnapshot& snapshot, std::size_t width,
                                     std::size_t height, bool color);

// One plain line for the latest evaluation: step, elapsed, losses, best scores, and the
// formed line when this evaluation is the one where induction heads formed.
std::string train_progress_line(const TrainSnapshot& snapshot);

}  // namespace mha
