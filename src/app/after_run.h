#pragma once
// What a run shows after its report, read from the finished forward pass: the
// scale statistics and per-head summary, the heatmaps, the SVG, the ablation.

#include "app/config.h"
#include "app/problem.h"
#include "show/score_stats.h"

#include <ostream>

namespace mha {

// stats: the ScoreStats tracer that watched the pass (enabled when wants_summary).
void show_after_run(std::ostream& out, const Config& config, const Problem& problem,
                    const ForwardResult& result, const ScoreStats& stats);

}  // namespace mha
