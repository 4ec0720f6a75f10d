// Terminal heatmaps: a scale legend, then the maps in rows of panels, masked keys hatched.

#include "show/heatmap.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "show/palette.h"
#include "show/text_layout.h"

namespace mha {

namespace {

constexpr std::size_t panel_gap = 3;
constexpr std::size_t max_label = 12;  // row labels longer than this are cut with "…"

// The first `width` display columns of a UTF-8 label, "…" marking a cut.
std::string clipped(const std::string& label, std::size_t width) {
    if (display_width(label) <= width) return label;
    std::string kept;
    std::size_t used = 0;
    for (std::size_t i = 0; i < label.size(); ++i) {
        const bool starts = (static_cast<unsigned char>(label[i]) & 0xC0) != 0x80;
        if (starts && ++used == width) break;
        kept += label[i];
    }
    return kept + "…";
}

std::string background(float weight, Shading shading) {
    if (shading == Shading::TrueColour) {
        const Rgb c = palette_colour(weight);
        return "\x1b[48;2;" + std::to_string(c.r) + ";" + std::to_string(c.g) + ";" +
               std::to_string(c.b) + "m";
    }
    return "\x1b[48;5;" + std::to_string(colour256_index(weight)) + "m";
}

char ramp_char(float weight) {
    if (std::isnan(weight)) return '?';
    const int level = int(std::floor(std::fmin(1.0f, std::fmax(0.0f, weight)) * 10.0f));
    return plain_ramp[std::min(level, 9)];
}

std::string cell(float weight, Shading shading, std::size_t cell_width) {
    if (shading == Shading::Plain) return std::string(cell_width, ramp_char(weight));
    return background(weight, shading) + std::string(cell_width, ' ') + ansi_reset;
}

// A key the mask hides: hatched, the SVG's way, in grey on the terminal's own background
// (no colour of the scale), so it never reads as a weight near 0.
std::string masked_cell(Shading shading, std::size_t cell_width) {
    const std::string hatch(cell_width, masked_char);
    if (shading == Shading::Plain) return hatch;
    const char* grey = shading == Shading::TrueColour ? "\x1b[38;2;128;128;128m" : "\x1b[38;5;244m";
    return grey + hatch + ansi_reset;
}

void legend(std::ostream& out, Shading shading, bool auto_scale, bool masked) {
    const char* low = auto_scale ? "min" : "0";
    const char* high = auto_scale ? "max" : "1";
    if (shading == Shading::Plain) {
        out << "scale: " << low << " [" << plain_ramp << "] " << high;
        if (auto_scale)
            out << ", one character per tenth of each map's own range\n";
        else
            out << ", one character per 0.1 of weight (blank: below 0.1)\n";
    } else {
        out << "scale: " << low << " ";
        for (int step = 0; step <= 10; ++step) out << cell(float(step) / 10.0f, shading, 2);
        out << " " << high << "\n";
    }
    if (masked) {
        out << "masked: " << masked_cell(shading, 2)
            << " a key the mask hides (weight 0 by the mask, not by the scores)\n";
    }
    if (auto_scale)
        out << "(--scale auto: each map from its own min to its own max, shown in its title)\n";
}

// What the panels show of a map: the first `rows` queries and `cols` keys.
struct Shown {
    std::size_t rows, cols;
};

// Key numbers as digits stacked in up to three lines (hundreds, tens, units).
std::vector<std::string> key_header(std::size_t cols, std::size_t panel_width,
                                    std::size_t cell_width) {
    std::vector<std::string> lines;
    for (std::size_t place = 100; place >= 1; place /= 10) {
        if (place > 1 && cols <= place) continue;
        std::string line;
        for (std::size_t key = 0; key < cols; ++key) {
            const bool shown = key >= place || place == 1;
            line += shown ? char('0' + (key / place) % 10) : ' ';
            line += std::string(cell_width - 1, ' ');
        }
        lines.push_back(padded_right(line, panel_width));
    }
    return lines;
}

// The map's title, with its range under --scale auto.
std::string title(const WeightMap& map, const HeatmapStyle& style) {
    if (!style.auto_scale) return map.title;
    return map.title + " [" + weight_range(map, true).text() + "]";
}

// One line of a band, without the trailing blanks.
void put_line(std::ostream& out, std::string line) {
    line.erase(line.find_last_not_of(' ') + 1);
    out << line << "\n";
}

// The maps [band, band + count) side by side.
void draw_band(std::ostream& out, const WeightMap* band, std::size_t count,
               const std::vector<std::string>& labels, std::size_t label_width,
               std::size_t panel_width, const Shown& shown, const HeatmapStyle& style) {
    const std::size_t cell_width = style.cell_width;
    const std::string gap(panel_gap, ' ');
    const std::string blank_label(label_width, ' ');
    std::string titles = blank_label;
    std::vector<WeightRange> ranges;
    for (const WeightMap* map = band; map != band + count; ++map) {
        ranges.push_back(weight_range(*map, style.auto_scale));
        titles += padded_right(clipped(title(*map, style), panel_width), panel_width) + gap;
    }
    put_line(out, titles);
    for (const std::string& header : key_header(shown.cols, panel_width, cell_width)) {
        std::string line = blank_label;
        for (std::size_t p = 0; p < count; ++p) line += header + gap;
        put_line(out, line);
    }
    for (std::size_t query = 0; query < shown.rows; ++query) {
        std::string line = padded_right(labels[query], label_width);
        for (std::size_t p = 0; p < count; ++p) {
            const WeightMap& map = band[p];
            for (std::size_t key = 0; key < shown.cols; ++key) {
                line += heatmap_cell(ranges[p].position(map.at(query, key)),
                                     map.is_blocked(query, key), style.shading, cell_width);
            }
            line += std::string(panel_width - shown.cols * cell_width, ' ') + gap;
        }
        put_line(out, line);
    }
}

// Labels "9 j" and "10 k" as " 9 j" and "10 k": the leading position numbers padded on the
// left to the widest, so that the tokens after them stand in one column.
void right_align_numbers(std::vector<std::string>& labels) {
    const auto digits_of = [](const std::string& label) {
        std::size_t digits = 0;
        while (digits < label.size() && std::isdigit(static_cast<unsigned char>(label[digits])))
            ++digits;
        return digits;
    };
    std::size_t widest = 0;
    for (const std::string& label : labels) widest = std::max(widest, digits_of(label));
    for (std::string& label : labels) {
        const std::size_t digits = digits_of(label);
        if (digits > 0) label.insert(0, widest - digits, ' ');
    }
}

}  // namespace

std::string heatmap_cell(float weight, bool masked, Shading shading, std::size_t cell_width) {
    return masked ? masked_cell(shading, cell_width) : cell(weight, shading, cell_width);
}

void draw_heatmaps(std::ostream& out, const std::vector<WeightMap>& maps,
                   const std::vector<std::string>& row_labels, const HeatmapStyle& style) {
    if (maps.empty()) return;
    const std::size_t n = maps.front().rows, m = maps.front().cols;
    std::vector<std::string> labels;
    for (std::size_t i = 0; i < n; ++i) labels.push_back(clipped(row_labels[i], max_label));
    right_align_numbers(labels);
    std::size_t label_width = 0;
    for (const std::string& label : labels)
        label_width = std::max(label_width, display_width(label));
    label_width += 2;

    const std::size_t room_for_keys = style.width > label_width ? style.width - label_width : 0;
    HeatmapStyle fitted = style;
    if (style.narrow_to_fit && m * style.cell_width > room_for_keys) fitted.cell_width = 1;
    const std::size_t cell_width = fitted.cell_width;
    const std::size_t room =
        style.width > label_width + cell_width ? style.width - label_width : cell_width;
    const Shown shown{std::min(n, style.max_rows),
                      std::max<std::size_t>(1, std::min(m, room / cell_width))};
    std::size_t panel_width = shown.cols * cell_width;
    for (const WeightMap& map : maps)
        panel_width = std::max(panel_width, display_width(title(map, fitted)));
    panel_width = std::min(panel_width, room);
    const std::size_t per_band =
        std::max<std::size_t>(1, (room + panel_gap) / (panel_width + panel_gap));

    legend(out, style.shading, style.auto_scale, any_masked(maps));
    for (std::size_t first = 0; first < maps.size(); first += per_band) {
        out << "\n";
        draw_band(out, maps.data() + first, std::min(maps.size() - first, per_band), labels,
                  label_width, panel_width, shown, fitted);
    }
    if (shown.rows < n || shown.cols < m) {
        std::string cut = "cut to fit: showing queries 0.." + std::to_string(shown.rows - 1) +
                          " of " + std::to_string(n) + " and keys 0.." +
                          std::to_string(shown.cols - 1) + " of " + std::to_string(m) +
                          "; a wider terminal (COLUMNS) or --export-svg shows them all";
        out << "\n";
        write_filled(out, words_of(cut), " ", "", "  ");
    }
}

}  // namespace mha
