// SVG heatmaps: panels in a grid, labels in a sans-serif font, a colour bar below.

#include "show/svg.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "show/palette.h"
#include "show/format.h"
#include "show/text_layout.h"

namespace mha {

namespace {

constexpr double cell = 26;         // px per weight
constexpr double char_width = 7.5;  // px per character of a 13 px label, roughly
constexpr double margin = 20;
constexpr double title_height = 24;
constexpr double bar_height = 16;

struct Geometry {
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
    g.label_width = double(longest_row) * char_width + 10;
    g.head_height = title_height + double(longest_col) * char_width * 0.75 + 12;
    g.panel_width = g.label_width + double(first.cols) * cell + margin;
    g.panel_height = g.head_height + double(first.rows) * cell + margin;
    g.columns = std::size_t(std::ceil(std::sqrt(double(maps.size()))));
    return g;
}

std::string number(double value) { return fixed(value, 1); }

void write_panel(std::ostream& out, const WeightMap& map, const std::vector<std::string>& rows,
                 const std::vector<std::string>& cols, const Geometry& g, double x, double y) {
    const double left = x + g.label_width, top = y + g.head_height;
    out << "<g class=\"panel\">\n<text class=\"title\" x=\"" << number(left) << "\" y=\""
        << number(y + 16) << "\">" << xml_escaped(map.title) << "</text>\n";
    for (std::size_t key = 0; key < map.cols; ++key) {
        const double cx = left + (double(key) + 0.5) * cell, cy = top - 6;
        out << "<text class=\"key\" transform=\"translate(" << number(cx) << "," << number(cy)
            << ") rotate(-50)\">" << xml_escaped(cols[key]) << "</text>\n";
    }
    for (std::size_t query = 0; query < map.rows; ++query) {
        out << "<text class=\"query\" x=\"" << number(left - 6) << "\" y=\""
            << number(top + (double(query) + 0.5) * cell + 4) << "\">" << xml_escaped(rows[query])
            << "</text>\n";
        for (std::size_t key = 0; key < map.cols; ++key) {
            const float w = map.at(query, key);
            out << "<rect class=\"cell\" x=\"" << number(left + double(key) * cell) << "\" y=\""
                << number(top + double(query) * cell) << "\" width=\"" << number(cell)
                << "\" height=\"" << number(cell) << "\" fill=\"" << hex(weight_colour(w))
                << "\"><title>" << xml_escaped(rows[query] + " → " + cols[key] + ": " + fixed(w, 4))
                << "</title></rect>\n";
        }
    }
    out << "</g>\n";
}

void write_scale(std::ostream& out, double x, double y, double width) {
    constexpr int steps = 50;
    out << "<g class=\"scale\">\n<text class=\"title\" x=\"" << number(x) << "\" y=\""
        << number(y - 6) << "\">attention weight</text>\n";
    for (int s = 0; s < steps; ++s) {
        out << "<rect x=\"" << number(x + width * s / steps) << "\" y=\"" << number(y)
            << "\" width=\"" << number(width / steps + 0.5) << "\" height=\"" << number(bar_height)
            << "\" fill=\"" << hex(weight_colour((float(s) + 0.5f) / steps)) << "\"/>\n";
    }
    for (int tick = 0; tick <= 4; ++tick) {
        out << "<text class=\"tick\" x=\"" << number(x + width * tick / 4) << "\" y=\""
            << number(y + bar_height + 14) << "\">" << fixed(tick / 4.0, 2) << "</text>\n";
    }
    out << "</g>\n";
}

}  // namespace

std::string xml_escaped(const std::string& text) {
    static const std::string specials = "&<>\"'";
    static const char* const entities[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
    std::string escaped;
    for (char c : text) {
        const std::size_t special = specials.find(c);
        if (special == std::string::npos) escaped += c;
        else escaped += entities[special];
    }
    return escaped;
}

void write_svg(std::ostream& out, const std::vector<WeightMap>& maps,
               const std::vector<std::string>& row_labels,
               const std::vector<std::string>& col_labels, const std::string& caption) {
    const Geometry g = geometry(maps, row_labels, col_labels);
    const std::size_t grid_rows = (maps.size() + g.columns - 1) / g.columns;
    const double width = std::max(margin * 2 + double(g.columns) * g.panel_width, 320.0);
    const double scale_top = margin + title_height + double(grid_rows) * g.panel_height + 20;
    const double height = scale_top + bar_height + 40;
    out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << number(width) << "\" height=\""
        << number(height) << "\" viewBox=\"0 0 " << number(width) << " " << number(height)
        << "\">\n<style>text{font-family:DejaVu Sans,Helvetica,Arial,sans-serif;font-size:13px;"
        << "fill:#222}.title{font-weight:bold;font-size:14px}.query{text-anchor:end}"
        << ".tick{text-anchor:middle;font-size:11px}.cell{shape-rendering:crispEdges}</style>\n"
        << "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n"
        << "<text class=\"title\" x=\"" << number(margin) << "\" y=\"" << number(margin + 8)
        << "\">" << xml_escaped(caption) << "</text>\n";
    for (std::size_t i = 0; i < maps.size(); ++i) {
        const double x = margin + double(i % g.columns) * g.panel_width;
        const double y = margin + title_height + double(i / g.columns) * g.panel_height;
        write_panel(out, maps[i], row_labels, col_labels, g, x, y);
    }
    write_scale(out, margin + g.label_width, scale_top,
                std::min(width - 2 * margin - g.label_width, 300.0));
    out << "</svg>\n";
}

std::uint64_t svg_size_bound(std::size_t maps, const std::vector<std::string>& row_labels,
                             const std::vector<std::string>& col_labels,
                             const std::string& caption) {
    // an escaped byte takes at most 6 ("&quot;"), a number at most 24 characters
    std::uint64_t row = 0, col = 0;
    for (const std::string& label : row_labels) row = std::max<std::uint64_t>(row, 6 * label.size());
    for (const std::string& label : col_labels) col = std::max<std::uint64_t>(col, 6 * label.size());
    constexpr std::uint64_t cell_text = 150 + 2 * 24, label_text = 100 + 2 * 24, fixed_text = 8192;
    const std::uint64_t rows = row_labels.size(), cols = col_labels.size();
    const double panel = double(rows) * double(cols) * double(cell_text + row + col) +
                         double(rows) * double(label_text + row) +
                         double(cols) * double(label_text + col) + 256;
    const double total = double(maps) * panel + double(fixed_text + 6 * caption.size());
    return total >= 1.8e19 ? std::uint64_t(1.8e19) : std::uint64_t(total);
}

}  // namespace mha
