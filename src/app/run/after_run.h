#pragma once
// What a run shows after its report, read from the finished forward pass: the
// scale statistics and per-head summary, the heatmaps, the SVG, the ablation.

#include "app/cli/config.h"
#include "app/run/problem.h"
#include "show/score_stats.h"

#include <cstdint>
#include <ostream>
#include <vector>

namespace mha {

// --export-svg is refused before the run when it could be larger than this.
inline constexpr std::uint64_t max_svg_bytes = std::uint64_t(256) << 20;

// The maps --export-svg and the lesson page draw: the heads --head chose (all by default)
// and the mean.
std::size_t drawn_maps(const Config& config, std::size_t heads);

// For each head of batch 0, the (N, M) row-major grid of keys step 8 hides from each query;
// empty when it hides none (no mask, no causal rule, no window), or when the mask files do not
// span the M keys (keys appended after the projections).
std::vector<std::vector<bool>> blocked_grids(const Problem& problem);

// Throws mha::Error when the SVG asked for could outgrow max_svg_bytes.
void check_svg_size(const Config& config, const RunInfo& info);

// The same for any SVG of `maps` panels with these labels and caption (the model's too).
void check_svg_size(const std::string& path, std::size_t maps, const std::vector<std::string>& rows,
                    const std::vector<std::string>& cols, const std::vector<std::string>& caption);

// stats: the ScoreStats tracer that watched the pass (enabled when wants_summary).
void show_after_run(std::ostream& out, const Config& config, const Problem& problem,
                    const ForwardResult& result, const ScoreStats& stats);

}  // namespace mha
