// The views after a run, each only when asked for: summary, ablation, contributions, heatmaps.

#include "app/run/after_run.h"

#include <cmath>
#include <limits>

#include "app/cli/terminal.h"
#include "app/run/contributions.h"
#include "app/run/variants.h"
#include "core/checked.h"
#include "core/error.h"
#include "core/position/position_bias.h"
#include "io/atomic_file.h"
#include "show/caption.h"
#include "show/format.h"
#include "show/head_summary.h"
#include "show/heatmap.h"
#include "show/svg.h"
#include "show/text_layout.h"
#include "show/weight_maps.h"

namespace mha {

namespace {

// ‖a − b‖ / ‖a‖ over all elements.
double relative_change(const Tensor& a, const Tensor& b) {
    const std::vector<float> x = a.to_vector(), y = b.to_vector();
    double difference = 0.0, norm = 0.0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        difference += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
        norm += double(x[i]) * x[i];
    }
    return norm > 0.0 ? std::sqrt(difference / norm) : std::sqrt(difference);
}

void report_ablation(std::ostream& out, const Config& config, const Problem& problem,
                     const ForwardResult& result, std::size_t head) {
    Problem without_head = problem;
    without_head.options.ablate_head = head;
    NullTracer quiet;
    const ForwardResult ablated = run_pass(config, without_head, quiet);
    write_filled(out,
                 words_of("ablating head " + std::to_string(head) +
                          " (its context zeroed before W_o) changes the output by " +
                          fixed(100.0 * relative_change(result.output, ablated.output), 2) +
                          "% (relative norm ‖out − out_ablated‖ / ‖out‖)"),
                 " ", "\n", "  ");
}

std::string batch_note(const RunInfo& info) {
    return info.batch > 1 ? "batch 0 of " + std::to_string(info.batch) : "batch 0";
}

std::vector<std::string> svg_caption(const RunInfo& info) {
    return caption_lines(
        info, "attention weights, " + batch_note(info) + " (rows: queries, columns: keys)");
}

// Whether step 8 hides key j from query i under mask (an -inf it adds, or the causal rule
// or window it applies).
bool hides(const HeadMask& mask, std::size_t i, std::size_t j) {
    constexpr float blocked = -std::numeric_limits<float>::infinity();
    if (mask.attn != nullptr && mask.attn[i * mask.m + j] == blocked) return true;
    if (mask.padding != nullptr && mask.padding[j] == blocked) return true;
    const Masks& rules = *mask.masks;
    if (rules.window > 0)
        return !window_allows({rules.window, rules.sinks}, i + mask.m - mask.n, j);
    return j >= mask.key_end(i);
}

}  // namespace

std::size_t drawn_maps(const Config& c, std::size_t heads) {
    return (c.view_heads.empty() ? (c.mean_view ? 0 : heads) : c.view_heads.size()) +
           (c.mean_view ? 1 : 0);
}

std::vector<std::vector<bool>> blocked_grids(const Problem& problem) {
    const RunInfo& info = problem.info;
    const Masks& masks = problem.masks;
    const std::size_t n = info.seq_len, m = info.kv_len;
    const bool fits =
        (masks.attn_mask.empty() || masks.attn_mask.size(masks.attn_mask.dim() - 1) == m) &&
        (masks.key_padding.empty() || masks.key_padding.size(masks.key_padding.dim() - 1) == m);
    const bool hides_none = !masks.has_attn_mask() && !masks.has_key_padding() &&
                            !masks.causal && masks.window == 0;  // (ALiBi adds, hides nothing)
    if (!fits || info.batch == 0 || hides_none) return {};
    const Sizes sizes{info.batch,   n,         m,          info.d_model,
                      info.kdim,    info.vdim, info.heads, info.kv_heads,
                      info.head_dim};
    std::vector<std::vector<bool>> grids;
    for (std::size_t head = 0; head < info.heads; ++head) {
        const HeadMask mask = unit_mask(masks, 0, head, sizes);
        std::vector<bool> grid(n * m);
        for (std::size_t i = 0; i < n; ++i) {
            for (std::size_t j = 0; j < m; ++j) grid[i * m + j] = hides(mask, i, j);
        }
        grids.push_back(std::move(grid));
    }
    return grids;
}

void check_svg_size(const Config& config, const RunInfo& info) {
    if (config.svg_path.empty()) return;
    const std::vector<std::string> rows = position_labels(info.seq_len, info.tokens);
    const std::vector<std::string> cols = key_labels(info);
    check_svg_size(config.svg_path, drawn_maps(config, info.heads), rows, cols, svg_caption(info));
}

void check_svg_size(const std::string& path, std::size_t maps, const std::vector<std::string>& rows,
                    const std::vector<std::string>& cols, const std::vector<std::string>& caption) {
    const std::uint64_t bytes = svg_size_bound(maps, rows, cols, caption);
    if (bytes > max_svg_bytes) {
        throw Error("--export-svg " + path + " would take up to " + byte_size(bytes) + " (" +
                    std::to_string(maps) + " panels of " + std::to_string(rows.size()) + "x" +
                    std::to_string(cols.size()) + " cells), more than the " +
                    byte_size(max_svg_bytes) +
                    " an SVG may take; draw fewer heads with --head or use fewer positions");
    }
}

void show_after_run(std::ostream& out, const Config& config, const Problem& problem,
                    const ForwardResult& result, const ScoreStats& stats) {
    const RunInfo& info = problem.info;
    const MapChoice choice{config.view_heads, config.mean_view, info.head_names};
    const std::vector<std::string> rows = position_labels(info.seq_len, info.tokens);
    if (wants_summary(config)) {
        stats.print(out, result, info.head_dim, !config.no_scale,
                    config.scores.scale_base.value_or(0.0), config.scores.softcap.value_or(0.0));
        print_head_summary(out, head_patterns(result.weights), info.head_names);
    }
    if (config.ablate_head) report_ablation(out, config, problem, result, *config.ablate_head);
    if (config.head_contributions) report_contributions(out, config, problem, result);
    if (config.heatmap) {  // last, so that a terminal keeps the picture on the screen
        out << "\nattention weights, " << batch_note(info) << " (rows: queries, columns: keys)\n";
        HeatmapStyle style = terminal_style(config.color);
        style.auto_scale = config.auto_scale;
        draw_heatmaps(out, weight_maps(result.weights, choice, blocked_grids(problem)), rows,
                      style);
    }
    if (!config.svg_path.empty()) {
        const std::vector<std::string> cols = key_labels(info);
        AtomicFile file(config.svg_path);
        SvgStyle style;
        style.caption = svg_caption(info);
        style.auto_scale = config.auto_scale;
        write_svg(file.stream(), weight_maps(result.weights, choice, blocked_grids(problem)), rows,
                  cols, style);
        file.commit();
    }
}

}  // namespace mha
