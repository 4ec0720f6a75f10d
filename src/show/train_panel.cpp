// The live training panel and the plain progress line, as text.

#include "show/train_panel.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "io/printable.h"
#include "show/format.h"
#include "show/heatmap.h"
#include "show/model_view.h"
#include "show/text_layout.h"

namespace mha {

namespace {

const std::string bold = "\x1b[1m";

// Sparkline levels, lowest first: Unicode blocks, or the plain heatmap ramp without its blank.
const char* const block_levels[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
const std::string plain_levels = std::string(plain_ramp).substr(1);
// A bar's partial cell, in eighths of a column (1..7).
const char* const bar_eighths[] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};

constexpr std::size_t bar_width = 10;   // columns of a score bar (score 1: all of them)
constexpr std::size_t head_label = 6;   // "L0 H2 "
constexpr std::size_t score_text = 4;   // "0.79"
constexpr std::size_t entry_gap = 2;    // between a head's two scores, and between columns
constexpr std::size_t map_gap = 3;      // between the two heatmaps
constexpr std::size_t full_width = 80;  // the panel's heatmaps need this much room
constexpr std::size_t full_height = 24;
constexpr std::size_t min_map_rows = 3;  // fewer query rows than this: no heatmaps

// A head of a layer, and its score; found is false when no head qualified.
struct BestHead {
    std::size_t layer = 0, head = 0;
    double score = 0.0;
    bool found = false;
};

// The highest score among layers [first, last) of scores[layer][head], NaN skipped.
BestHead best_head(const std::vector<std::vector<double>>& scores, std::size_t first,
                   std::size_t last) {
    BestHead best;
    for (std::size_t l = first; l < std::min(last, scores.size()); ++l) {
        for (std::size_t h = 0; h < scores[l].size(); ++h) {
            const double score = scores[l][h];
            if (std::isnan(score) || (best.found && score <= best.score)) continue;
            best = {l, h, score, true};
        }
    }
    return best;
}

BestHead best_previous(const TrainEvaluation& evaluation) {
    return best_head(evaluation.prev_token, 0, 1);
}

BestHead best_induction(const TrainEvaluation& evaluation) {
    return best_head(evaluation.induction, 1, evaluation.induction.size());
}

std::string head_name(std::size_t layer, std::size_t head) {
    return "L" + std::to_string(layer) + " H" + std::to_string(head);
}

std::string score_or_dash(double score) { return std::isnan(score) ? "   -" : fixed(score, 2); }

// A loss with three decimals; "-" before the first step has one.
std::string loss_text(double loss) { return std::isfinite(loss) ? fixed(loss, 3) : "-"; }

// "1:02", "12:34", "1:02:03"
std::string clock(double seconds) {
    const long total = std::lround(std::max(0.0, seconds));
    const long hours = total / 3600, minutes = total / 60 % 60, rest = total % 60;
    const auto two = [](long n) { return (n < 10 ? "0" : "") + std::to_string(n); };
    if (hours > 0) return std::to_string(hours) + ":" + two(minutes) + ":" + two(rest);
    return std::to_string(minutes) + ":" + two(rest);
}

std::string formed_text(const InductionFormed& formed) {
    return "induction heads formed at step " + with_commas(formed.step) + ": loss " +
           fixed(formed.loss_before, 2) + " → " + fixed(formed.loss_after, 2);
}

std::string header_line(const TrainSnapshot& s, bool color) {
    std::string line = color ? bold + "mha train" + ansi_reset : "mha train";
    line += "   step " + with_commas(s.step) + " of " + with_commas(s.steps);
    if (s.steps > 0) line += " (" + std::to_string(100 * s.step / s.steps) + "%)";
    line += "   " + clock(s.seconds) + " elapsed";
    if (s.step < s.steps && s.eta_seconds > 0) line += ", about " + clock(s.eta_seconds) + " to go";
    return line;
}

// One sparkline column's steps: [begin, end) of the 0-based step indices.
struct Span {
    std::size_t begin, end;
};

Span column_span(std::size_t column, std::size_t columns, std::size_t steps) {
    const std::size_t begin = column * steps / columns;
    return {begin, std::max(begin + 1, (column + 1) * steps / columns)};
}

// The two loss curves over `columns` columns spanning the planned steps: the training loss
// as each column's mean, the held-out loss of the latest evaluation within reach (NaN where
// training has not reached yet).
std::vector<std::vector<double>> loss_curves(const TrainSnapshot& s, std::size_t columns) {
    const std::size_t steps = std::max({s.steps, s.step_losses.size(), std::size_t(1)});
    std::vector<double> train(columns, NAN), held(columns, NAN);
    std::size_t next = 0;  // the first evaluation not yet drawn
    double latest = NAN;
    for (std::size_t c = 0; c < columns; ++c) {
        const Span span = column_span(c, columns, steps);
        const std::size_t end = std::min(span.end, s.step_losses.size());
        if (span.begin < end) {
            double sum = 0.0;
            for (std::size_t i = span.begin; i < end; ++i) sum += s.step_losses[i];
            train[c] = sum / double(end - span.begin);
        }
        while (next < s.history.size() && s.history[next].step <= span.end)
            latest = s.history[next++].val_loss;
        if (span.begin < std::max(s.step, s.step_losses.size())) held[c] = latest;
    }
    return {train, held};
}

std::string sparkline(const std::vector<double>& values, double low, double high, bool color) {
    std::string line;
    const std::size_t levels = color ? std::size(block_levels) : plain_levels.size();
    for (double v : values) {
        if (!std::isfinite(v)) {
            line += ' ';
            continue;
        }
        const double t = high > low ? (v - low) / (high - low) : 0.5;
        const std::size_t level = std::min(levels - 1, std::size_t(t * double(levels)));
        line += color ? std::string(block_levels[level]) : std::string(1, plain_levels[level]);
    }
    return line;
}

std::vector<std::string> loss_lines(const TrainSnapshot& s, std::size_t width, bool color) {
    const bool evaluated = !s.history.empty();
    const std::string train = evaluated ? loss_text(s.history.back().loss) : "-";
    const std::string held = evaluated ? loss_text(s.history.back().val_loss) : "-";
    const std::size_t label = 21;  // "held-out loss  1.987 "
    const std::size_t columns = width > label ? width - label : 1;
    const std::vector<std::vector<double>> curves = loss_curves(s, columns);
    double low = INFINITY, high = -INFINITY;
    for (const std::vector<double>& curve : curves) {
        for (double v : curve) {
            if (!std::isfinite(v)) continue;
            low = std::min(low, v);
            high = std::max(high, v);
        }
    }
    std::vector<std::string> lines = {padded_right("training loss", 15) + padded_right(train, 6) +
                                          sparkline(curves[0], low, high, color),
                                      padded_right("held-out loss", 15) + padded_right(held, 6) +
                                          sparkline(curves[1], low, high, color)};
    if (std::isfinite(low))
        lines.push_back(std::string(label, ' ') + "from " + fixed(high, 2) + " (top) to " +
                        fixed(low, 2) + " (bottom), over steps 1.." +
                        with_commas(std::max(s.steps, s.step)));
    return lines;
}

std::string status_line(const std::vector<TrainEvaluation>& history) {
    if (history.empty()) return "the heads' scores come with the first evaluation";
    if (const std::optional<InductionFormed> formed = induction_formed(history))
        return formed_text(*formed);
    if (history.back().induction.size() < 2)
        return "induction heads need two layers: one finds the previous character, one copies";
    const BestHead best = best_induction(history.back());
    return "induction heads not formed yet: best " + score_or_dash(best.score) + ", formed at " +
           fixed(induction_formed_at, 2);
}

// A score in [0, 1] as a bar of bar_width columns, in eighths of a column (whole columns of
// '#' when plain).
std::string bar(double score, bool color) {
    const double clamped = std::isnan(score) ? 0.0 : std::clamp(score, 0.0, 1.0);
    if (!color) {
        const std::size_t full = std::size_t(std::lround(clamped * bar_width));
        return std::string(full, '#') + std::string(bar_width - full, ' ');
    }
    const std::size_t eighths = std::size_t(std::lround(clamped * bar_width * 8));
    std::string text;
    for (std::size_t i = 0; i < eighths / 8; ++i) text += "█";
    text += bar_eighths[eighths % 8];
    const std::size_t used = eighths / 8 + (eighths % 8 > 0 ? 1 : 0);
    return text + std::string(bar_width - used, ' ');
}

std::size_t entry_width() { return head_label + 2 * (bar_width + 1 + score_text) + entry_gap; }

std::string head_entry(const TrainEvaluation& e, std::size_t layer, std::size_t head, bool chosen,
                       bool color) {
    const double previous = head < e.prev_token[layer].size() ? e.prev_token[layer][head] : NAN;
    const double induction = head < e.induction[layer].size() ? e.induction[layer][head] : NAN;
    std::string label = padded_right(head_name(layer, head), head_label);
    if (chosen && color) label = bold + label + ansi_reset;
    return label + bar(previous, color) + " " + score_or_dash(previous) +
           std::string(entry_gap, ' ') + bar(induction, color) + " " + score_or_dash(induction);
}

// Every head's two scores as bars, in columns of whole layers, layer 0 first.
std::vector<std::string> head_lines(const TrainEvaluation& e, std::size_t width, bool color) {
    const std::size_t layers = std::min(e.prev_token.size(), e.induction.size());
    std::size_t heads = 0;
    for (std::size_t l = 0; l < layers; ++l) heads = std::max(heads, e.prev_token[l].size());
    if (layers == 0 || heads == 0) return {};
    const std::size_t fit =
        std::max<std::size_t>(1, (width + entry_gap) / (entry_width() + entry_gap));
    const std::size_t columns = std::min(fit, layers);
    const std::size_t layers_per_column = (layers + columns - 1) / columns;
    const BestHead previous = best_previous(e), induction = best_induction(e);
    const auto is_chosen = [&](std::size_t l, std::size_t h) {
        return (previous.found && previous.layer == l && previous.head == h) ||
               (induction.found && induction.layer == l && induction.head == h);
    };
    const std::string heading = padded_right("head", head_label) +
                                padded_right("previous token", bar_width + 1 + score_text) +
                                std::string(entry_gap, ' ') + "induction";
    std::string top;
    for (std::size_t c = 0; c < columns; ++c)
        top += padded_right(heading, entry_width() + (c + 1 < columns ? entry_gap : 0));
    std::vector<std::string> lines = {top};
    for (std::size_t row = 0; row < layers_per_column * heads; ++row) {
        std::string line;
        for (std::size_t c = 0; c < columns; ++c) {
            const std::size_t layer = c * layers_per_column + row / heads, head = row % heads;
            if (layer >= layers) break;
            if (c > 0) line += std::string(entry_gap, ' ');
            line += head_entry(e, layer, head, is_chosen(layer, head), color);
        }
        lines.push_back(line);
    }
    return lines;
}

// The probe character as one column: the space as ␣, anything unprintable as U+FFFD.
std::string probe_glyph(const std::string& character) {
    if (character == " ") return "␣";
    const std::string shown = sanitized(character);
    return display_width(shown) == 1 ? shown : "?";
}

// The first of `keys` neighbouring keys that hold the most of the weight the queries from
// first_query on put on keys: the rightmost window within 1% of the most, so that a head that
// looks back a long way is seen, and a window does not wander between redraws over noise.
std::size_t heaviest_keys(const WeightMap& map, std::size_t first_query, std::size_t keys) {
    const std::size_t n = map.cols;
    std::vector<double> sums(n + 1, 0.0);  // sums[k]: the weight on keys 0..k-1
    for (std::size_t k = 0; k < n; ++k) {
        double weight = 0.0;
        for (std::size_t q = first_query; q < map.rows; ++q) {
            if (!map.is_blocked(q, k) && std::isfinite(map.at(q, k))) weight += map.at(q, k);
        }
        sums[k + 1] = sums[k] + weight;
    }
    double most = 0.0;
    for (std::size_t first = 0; first + keys <= n; ++first)
        most = std::max(most, sums[first + keys] - sums[first]);
    std::size_t best = n - keys;
    while (best > 0 && sums[best + keys] - sums[best] < 0.99 * most) --best;
    return best;
}

// One map in `columns` × `rows`: its title, the keys' characters, then the probe's last
// queries against the keys that hold most of their weight.
std::vector<std::string> mini_map(const TrainSnapshot& s, const BestHead& best, const char* role,
                                  std::size_t columns, std::size_t rows, bool color) {
    const Tensor& weights = s.probe_weights[best.layer];
    const WeightMap map = layer_maps(weights, best.layer, {best.head}, false).front();
    const std::size_t n = map.rows;
    const std::size_t keys = std::min(n, columns > 2 ? columns - 2 : 1);
    const std::size_t first_query = n - std::min(n, rows - 2);
    const std::size_t first_key = heaviest_keys(map, first_query, keys);
    const std::size_t end_key = first_key + keys;
    std::vector<std::string> lines = {head_name(best.layer, best.head) + " " + role + " " +
                                      fixed(best.score, 2) + ", keys " + std::to_string(first_key) +
                                      ".." + std::to_string(end_key - 1)};
    std::string key_row = "  ";
    for (std::size_t k = first_key; k < end_key; ++k) key_row += probe_glyph(s.probe_characters[k]);
    lines.push_back(key_row);
    const Shading shading = color ? Shading::Colour256 : Shading::Plain;
    for (std::size_t q = first_query; q < n; ++q) {
        std::string line = probe_glyph(s.probe_characters[q]) + " ";
        for (std::size_t k = first_key; k < end_key; ++k)
            line += heatmap_cell(map.at(q, k), map.is_blocked(q, k), shading, 1);
        lines.push_back(line);
    }
    return lines;
}

// The best previous-token head of layer 0 and the best induction head after it, side by side.
std::vector<std::string> map_lines(const TrainSnapshot& s, std::size_t width, std::size_t rows,
                                   bool color) {
    const TrainEvaluation& e = s.history.back();
    const std::size_t n = s.probe_characters.size();
    if (n == 0 || s.probe_weights.size() < e.prev_token.size()) return {};
    for (const Tensor& weights : s.probe_weights) {
        if (weights.dim() != 4 || weights.size(2) != n || weights.size(3) != n) return {};
    }
    const std::size_t columns = (width - map_gap) / 2;
    std::vector<std::vector<std::string>> maps;
    const BestHead previous = best_previous(e), induction = best_induction(e);
    if (previous.found) maps.push_back(mini_map(s, previous, "previous", columns, rows, color));
    if (induction.found) maps.push_back(mini_map(s, induction, "induction", columns, rows, color));
    std::vector<std::string> lines;
    for (std::size_t row = 0; !maps.empty() && row < maps.front().size(); ++row) {
        std::string line;
        for (std::size_t m = 0; m < maps.size(); ++m) {
            const std::string part = cut_to_width(maps[m][row], columns);
            line += m + 1 < maps.size()
                        ? part + std::string(columns + map_gap - visible_width(part), ' ')
                        : part;
        }
        lines.push_back(line);
    }
    return lines;
}

double best_induction_score(const TrainEvaluation& evaluation) {
    const BestHead best = best_induction(evaluation);
    return best.found ? best.score : NAN;
}

}  // namespace

std::optional<InductionFormed> induction_formed(const std::vector<TrainEvaluation>& history) {
    for (std::size_t at = 0; at < history.size(); ++at) {
        if (!(best_induction_score(history[at]) >= induction_formed_at)) continue;
        // the first evaluation with a training loss (none before the first step) if no
        // later one is under rise_from
        std::size_t before = 0;
        while (before < at && !std::isfinite(history[before].loss)) ++before;
        for (std::size_t i = at; i-- > before;) {
            if (best_induction_score(history[i]) < induction_rise_from &&
                std::isfinite(history[i].loss)) {
                before = i;
                break;
            }
        }
        return InductionFormed{history[at].step, history[before].loss, history[at].loss};
    }
    return std::nullopt;
}

std::vector<std::string> train_panel(const TrainSnapshot& snapshot, std::size_t width,
                                     std::size_t height, bool color) {
    std::vector<std::string> lines = {header_line(snapshot, color)};
    for (std::string& line : loss_lines(snapshot, width, color)) lines.push_back(line);
    lines.push_back(status_line(snapshot.history));
    if (!snapshot.history.empty()) {
        lines.emplace_back();
        for (std::string& line : head_lines(snapshot.history.back(), width, color))
            lines.push_back(line);
        const std::size_t used = lines.size() + 1;
        if (width >= full_width && height >= full_height && height >= used + min_map_rows + 2) {
            std::vector<std::string> maps = map_lines(snapshot, width, height - used, color);
            if (!maps.empty()) lines.emplace_back();
            for (std::string& line : maps) lines.push_back(line);
        }
    }
    for (std::string& line : lines) {
        line = cut_to_width(line, width);
        line.erase(line.find_last_not_of(' ') + 1);
    }
    if (lines.size() > height) {
        const std::size_t hidden = lines.size() - height + 1;
        lines.resize(height);
        if (height > 0)
            lines.back() = cut_to_width("… " + std::to_string(hidden) + " more lines", width);
    }
    return lines;
}

std::string train_progress_line(const TrainSnapshot& snapshot) {
    std::string line = "step " + with_commas(snapshot.step) + "/" + with_commas(snapshot.steps) +
                       "  " + clock(snapshot.seconds);
    if (snapshot.history.empty()) return line;
    const TrainEvaluation& e = snapshot.history.back();
    line += "  loss " + loss_text(e.loss) + "  held-out " + loss_text(e.val_loss);
    const BestHead previous = best_previous(e), induction = best_induction(e);
    if (previous.found) line += "  previous " + fixed(previous.score, 2);
    if (induction.found) line += "  induction " + fixed(induction.score, 2);
    const std::optional<InductionFormed> formed = induction_formed(snapshot.history);
    if (formed && formed->step == e.step) line += "\n" + formed_text(*formed);
    return line;
}

}  // namespace mha
