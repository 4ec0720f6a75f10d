// SVG heatmaps: a caption, panels in a grid, labels in a sans-serif font, a colour bar below.

#include "show/svg.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "io/printable.h"
#include "show/format.h"
#include "show/text_layout.h"

namespace mha {

namespace {

// px per weight: 26 for maps of up to 24 keys or queries, less for larger ones (a panel's
// cells then span about panel_cells px), never below min_cell
constexpr double max_cell = 26, min_cell = 12, panel_cells = 640;
// the width attribute: the drawing at its own size up to this many px, scaled down beyond
// (the viewBox keeps every detail for zooming in)
constexpr double max_display_width = 1280;
constexpr double char_width = 7.5;  // px per character of a 13 px label, roughly
constexpr double margin = 20;
constexpr double title_height = 24;
constexpr double caption_line = 18;
constexpr double bar_height = 16;

struct Geometry {
    double cell;         // px per weight
    double label_width;  // left of each panel: the query labels
    double head_height;  // above each panel's cells: title and key labels
    double panel_width, panel_height;
    std::size_t columns;
};

Geometry geometry(const std::vector<WeightMap>& maps, const std::vector<std::string>& rows,
                  const std::vector<std::string>& cols) {
    std::size_t longest_row = 1, longest_col = 1;
    for (const std::string& label : rows) longest_row = std::max(longest_row, display_width(label));
    for (const std::string& label : cols) longest_col = std::max(longest_col, display_width(label));
    const WeightMap& first = maps.front();
    Geometry g{};
    const double largest = double(std::max<std::size_t>({first.rows, first.cols, 1}));
    g.cell = std::clamp(std::floor(2 * panel_cells / largest) / 2, min_cell, max_cell);
    g.label_width = double(longest_row) * char_width + 10;
    g.head_height = title_height + double(longest_col) * char_width * 0.75 + 12;
    g.panel_width = g.label_width + double(first.cols) * g.cell + margin;
    g.panel_height = g.head_height + double(first.rows) * g.cell + margin;
    g.columns = std::size_t(std::ceil(std::sqrt(double(maps.size()))));
    return g;
}

std::string number(double value) { return fixed(value, 1); }

void write_cell(std::ostream& out, const WeightMap& map, const WeightRange& range,
                const SvgStyle& style, const std::string& label, std::size_t query, std::size_t key,
                double x, double y, double cell) {
    const float w = map.at(query, key);
    const bool blocked = map.is_blocked(query, key);
    const std::string fill = blocked ? "url(#" + style.id_prefix + "-hatch)"
                                     : hex(palette_colour(range.position(w), style.palette));
    out << "<rect class=\"cell" << (blocked ? " masked" : "") << "\" x=\"" << number(x) << "\" y=\""
        << number(y) << "\" width=\"" << number(cell) << "\" height=\"" << number(cell)
        << "\" fill=\"" << fill << "\"><title>"
        << xml_escaped(label + ": " + fixed(w, 4) + (blocked ? " (masked)" : ""))
        << "</title></rect>\n";
}

void write_panel(std::ostream& out, const WeightMap& map, const std::vector<std::string>& rows,
                 const std::vector<std::string>& cols, const Geometry& g, const SvgStyle& style,
                 double x, double y) {
    const double left = x + g.label_width, top = y + g.head_height;
    const WeightRange range = weight_range(map, style.auto_scale);
    const std::string title = style.auto_scale ? map.title + " [" + range.text() + "]" : map.title;
    out << "<g class=\"panel\">\n<text class=\"title\" x=\"" << number(left) << "\" y=\""
        << number(y + 16) << "\">" << xml_escaped(title) << "</text>\n";
    for (std::size_t key = 0; key < map.cols; ++key) {
        const double cx = left + (double(key) + 0.5) * g.cell, cy = top - 6;
        out << "<text class=\"key\" transform=\"translate(" << number(cx) << "," << number(cy)
            << ") rotate(-50)\">" << xml_escaped(cols[key]) << "</text>\n";
    }
    for (std::size_t query = 0; query < map.rows; ++query) {
        out << "<text class=\"query\" x=\"" << number(left - 6) << "\" y=\""
            << number(top + (double(query) + 0.5) * g.cell + 4) << "\">" << xml_escaped(rows[query])
            << "</text>\n";
        for (std::size_t key = 0; key < map.cols; ++key) {
            write_cell(out, map, range, style, rows[query] + " → " + cols[key], query, key,
                       left + double(key) * g.cell, top + double(query) * g.cell, g.cell);
        }
    }
    out << "<rect class=\"frame\" x=\"" << number(left) << "\" y=\"" << number(top) << "\" width=\""
        << number(double(map.cols) * g.cell) << "\" height=\"" << number(double(map.rows) * g.cell)
        << "\"/>\n</g>\n";
}

void write_scale(std::ostream& out, const SvgStyle& style, bool any_masked, double x, double y,
                 double width) {
    constexpr int steps = 50;
    out << "<g class=\"scale\">\n<text class=\"title\" x=\"" << number(x) << "\" y=\""
        << number(y - 6) << "\">"
        << (style.auto_scale ? "attention weight, each panel from its own min to its max "
                               "(--scale auto)"
                             : "attention weight (fixed scale 0 to 1)")
        << "</text>\n";
    for (int s = 0; s < steps; ++s) {
        out << "<rect x=\"" << number(x + width * s / steps) << "\" y=\"" << number(y)
            << "\" width=\"" << number(width / steps + 0.5) << "\" height=\"" << number(bar_height)
            << "\" fill=\"" << hex(palette_colour((float(s) + 0.5f) / steps, style.palette))
            << "\"/>\n";
    }
    out << "<rect class=\"frame\" x=\"" << number(x) << "\" y=\"" << number(y) << "\" width=\""
        << number(width) << "\" height=\"" << number(bar_height) << "\"/>\n";
    for (int tick = 0; tick <= 4; ++tick) {
        const std::string label = !style.auto_scale ? fixed(tick / 4.0, 2)
                                  : tick == 0       ? "min"
                                  : tick == 4       ? "max"
                                                    : "";
        out << "<text class=\"tick\" x=\"" << number(x + width * tick / 4) << "\" y=\""
            << number(y + bar_height + 14) << "\">" << label << "</text>\n";
    }
    if (any_masked) {
        const double at = x + width + 24;
        out << "<rect x=\"" << number(at) << "\" y=\"" << number(y) << "\" width=\""
            << number(bar_height) << "\" height=\"" << number(bar_height) << "\" fill=\"url(#"
            << style.id_prefix << "-hatch)\"/>\n<rect class=\"frame\" x=\"" << number(at)
            << "\" y=\"" << number(y) << "\" width=\"" << number(bar_height) << "\" height=\""
            << number(bar_height) << "\"/>\n<text x=\"" << number(at + bar_height + 6) << "\" y=\""
            << number(y + 12) << "\">masked (weight 0 by the mask)</text>\n";
    }
    out << "</g>\n";
}

bool any_masked(const std::vector<WeightMap>& maps) {
    for (const WeightMap& map : maps) {
        if (std::find(map.blocked.begin(), map.blocked.end(), true) != map.blocked.end())
            return true;
    }
    return false;
}

}  // namespace

std::string xml_escaped(const std::string& text) {
    static const std::string specials = "&<>\"'";
    static const char* const entities[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
    std::string escaped;
    for (char c : sanitized(text, true)) {
        const std::size_t special = specials.find(c);
        if (special == std::string::npos)
            escaped += c;
        else
            escaped += entities[special];
    }
    return escaped;
}

void write_svg(std::ostream& out, const std::vector<WeightMap>& maps,
               const std::vector<std::string>& row_labels,
               const std::vector<std::string>& col_labels, const SvgStyle& style) {
    for (const WeightMap& map : maps) {
        if (map.rows != row_labels.size() || map.cols != col_labels.size()) {
            throw Error("internal error: an SVG map of " + std::to_string(map.rows) + "x" +
                        std::to_string(map.cols) + " weights was given " +
                        std::to_string(row_labels.size()) + " query and " +
                        std::to_string(col_labels.size()) + " key labels");
        }
    }
    const Geometry g = geometry(maps, row_labels, col_labels);
    const std::size_t grid_rows = (maps.size() + g.columns - 1) / g.columns;
    const double width = std::max(margin * 2 + double(g.columns) * g.panel_width, 560.0);
    const double caption_height = double(style.caption.size()) * caption_line;
    const double panels_top = margin + caption_height + 8;
    const double scale_top = panels_top + double(grid_rows) * g.panel_height + 24;
    const double height = scale_top + bar_height + 40;
    const std::string hatch = style.id_prefix + "-hatch";
    const double shown_width = std::min(width, max_display_width);
    if (style.standalone) out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    out << "<svg" << (style.standalone ? " xmlns=\"http://www.w3.org/2000/svg\"" : "")
        << " width=\"" << number(shown_width) << "\" height=\""
        << number(height * shown_width / width) << "\" viewBox=\"0 0 " << number(width) << " "
        << number(height)
        << "\">\n<style>text{font-family:DejaVu Sans,Helvetica,Arial,sans-serif;font-size:13px;"
        << "fill:#333}.title{font-weight:bold;font-size:14px}.caption{font-size:13px}"
        << ".query{text-anchor:end}.tick{text-anchor:middle;font-size:11px}"
        << ".cell{shape-rendering:crispEdges}.frame{fill:none;stroke:#999;stroke-width:1}";
    if (g.cell < max_cell) {  // smaller cells, smaller labels: one label a cell, no overlap
        out << ".query,.key{font-size:" << number(std::max(8.0, 0.8 * g.cell)) << "px}";
    }
    out << "</style>\n<defs><pattern id=\"" << hatch
        << "\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
        << "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#ffffff\"/>"
        << "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#b0b0b0\" stroke-width=\"2\"/>"
        << "</pattern></defs>\n"
        << "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
    for (std::size_t line = 0; line < style.caption.size(); ++line) {
        out << "<text class=\"" << (line == 0 ? "title" : "caption") << "\" x=\"" << number(margin)
            << "\" y=\"" << number(margin + 8 + double(line) * caption_line) << "\">"
            << xml_escaped(style.caption[line]) << "</text>\n";
    }
    for (std::size_t i = 0; i < maps.size(); ++i) {
        const double x = margin + double(i % g.columns) * g.panel_width;
        const double y = panels_top + double(i / g.columns) * g.panel_height;
        write_panel(out, maps[i], row_labels, col_labels, g, style, x, y);
    }
    write_scale(out, style, any_masked(maps), margin + g.label_width, scale_top,
                std::clamp(width - 2 * margin - g.label_width - 260, 120.0, 300.0));
    out << "</svg>\n";
}

std::uint64_t svg_size_bound(std::size_t maps, const std::vector<std::string>& row_labels,
                             const std::vector<std::string>& col_labels,
                             const std::vector<std::string>& caption) {
    // an escaped byte takes at most 6 ("&quot;"), a number at most 24 characters
    std::uint64_t row = 0, col = 0, caption_bytes = 0;
    for (const std::string& label : row_labels)
        row = std::max<std::uint64_t>(row, 6 * label.size());
    for (const std::string& label : col_labels)
        col = std::max<std::uint64_t>(col, 6 * label.size());
    for (const std::string& line : caption) caption_bytes += 6 * line.size() + 128;
    constexpr std::uint64_t cell_text = 200 + 2 * 24, label_text = 100 + 2 * 24, fixed_text = 8192;
    const std::uint64_t rows = row_labels.size(), cols = col_labels.size();
    const double panel = double(rows) * double(cols) * double(cell_text + row + col) +
                         double(rows) * double(label_text + row) +
                         double(cols) * double(label_text + col) + 512;
    const double total = double(maps) * panel + double(fixed_text + caption_bytes);
    return total >= 1.8e19 ? std::uint64_t(1.8e19) : std::uint64_t(total);
}

}  // namespace mha
