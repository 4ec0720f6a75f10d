// SVG heatmaps: a caption, panels in a grid, labels in a sans-serif font, a colour bar below.
// Every style is a presentation attribute and masked cells are hatched with drawn lines (no CSS,
// no <pattern>), so librsvg and ImageMagick's own renderer draw what a browser draws.

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
constexpr double char_width = 7.5;        // px per character of a 13 px label, roughly
constexpr double title_char_width = 8.5;  // px per character of a 14 px bold title, roughly
constexpr double margin = 20;
constexpr double title_height = 24;
constexpr double caption_line = 18;
constexpr double bar_height = 16;
// masked cells: white under grey diagonal lines, hatch_step px apart along each edge
constexpr double hatch_step = 8.5, hatch_width = 2;
const char* const masked_fill = "#ffffff";
const char* const hatch_colour = "#b0b0b0";
const char* const font = "DejaVu Sans,Helvetica,Arial,sans-serif";

// ` class="name"` inside an HTML page, whose script finds the cells by class; nothing in a
// standalone file: ImageMagick's renderer opens a context per class it never closes, and
// gives up ("nested too deeply") a few hundred elements in.
std::string class_attribute(const SvgStyle& style, const std::string& name) {
    return style.standalone ? "" : " class=\"" + name + "\"";
}

// The attributes of a text element of this kind (title, caption, query, key, tick, plain);
// labels_px is the size of the query and key labels.
std::string text_style(const SvgStyle& style, const std::string& kind, double labels_px) {
    std::string attributes = " font-family=\"" + std::string(font) + "\" fill=\"#333\"";
    double px = 13;
    if (kind == "title") {
        px = 14;
        attributes += " font-weight=\"bold\"";
    } else if (kind == "query" || kind == "key") {
        px = labels_px;
        attributes += kind == "query" ? " text-anchor=\"end\"" : " text-anchor=\"middle\"";
    } else if (kind == "tick") {
        px = 11;
        attributes += " text-anchor=\"middle\"";
    }
    const std::string cls = kind == "plain" ? "" : class_attribute(style, kind);
    return "<text" + cls + attributes + " font-size=\"" + fixed(px, 1) + "\"";
}

// The length in px of a label at this font size, roughly.
double label_length(const std::string& label, double px) {
    return double(display_width(label)) * char_width * px / 13;
}

// The grey frame around a panel, the colour bar or the masked swatch.
void write_frame(std::ostream& out, const SvgStyle& style, double x, double y, double width,
                 double height) {
    out << "<rect" << class_attribute(style, "frame") << " x=\"" << fixed(x, 1) << "\" y=\""
        << fixed(y, 1) << "\" width=\"" << fixed(width, 1) << "\" height=\"" << fixed(height, 1)
        << "\" fill=\"none\" stroke=\"#999\" stroke-width=\"1\"/>\n";
}

struct Geometry {
    double cell;         // px per weight
    double label_width;  // left of each panel: the query labels
    double head_height;  // above each panel's cells: title and key labels
    double panel_width, panel_height;
    double labels_px;  // font size of the query and key labels: one label a cell, no overlap
    std::size_t columns;
};

// px per weight for maps of rows x cols.
double cell_size(std::size_t rows, std::size_t cols) {
    const double largest = double(std::max<std::size_t>({rows, cols, 1}));
    return std::clamp(std::floor(2 * panel_cells / largest) / 2, min_cell, max_cell);
}

Geometry geometry(const std::vector<WeightMap>& maps, const std::vector<std::string>& rows,
                  const std::vector<std::string>& cols, bool auto_scale) {
    std::size_t longest_row = 1, longest_col = 1, longest_title = 0;
    for (const WeightMap& map : maps)
        longest_title = std::max(longest_title, display_width(map.title));
    if (auto_scale) longest_title += 16;  // " [0.000 .. 1.000]"
    for (const std::string& label : rows) longest_row = std::max(longest_row, display_width(label));
    for (const std::string& label : cols) longest_col = std::max(longest_col, display_width(label));
    const WeightMap& first = maps.front();
    Geometry g{};
    g.cell = cell_size(first.rows, first.cols);
    g.label_width = double(longest_row) * char_width + 10;
    g.labels_px = g.cell < max_cell ? std::max(8.0, 0.8 * g.cell) : 13.0;
    g.head_height = title_height + double(longest_col) * char_width * g.labels_px / 13 + 12;
    g.panel_width =
        g.label_width +
        std::max(double(first.cols) * g.cell, double(longest_title) * title_char_width) + margin;
    g.panel_height = g.head_height + double(first.rows) * g.cell + margin;
    g.columns = std::size_t(std::ceil(std::sqrt(double(maps.size()))));
    return g;
}

std::string one_decimal(double value) { return fixed(value, 1); }

// Grey diagonal lines (lower left to upper right, like the terminal's //) across the square
// of side `size` at (x, y), each shortened by half the line width at both ends so that no
// stroke reaches past the square's edges.
void write_hatch(std::ostream& out, double x, double y, double size) {
    const double inset = hatch_width / 2 / std::sqrt(2.0);  // per axis
    out << "<path fill=\"none\" stroke=\"" << hatch_colour << "\" stroke-width=\""
        << one_decimal(hatch_width) << "\" d=\"";
    for (double u = hatch_step / 2; u < 2 * size; u += hatch_step) {
        // the line x' + y' = u inside the square: from its left or bottom edge to its top or right
        const double x0 = u <= size ? x : x + u - size, y0 = u <= size ? y + u : y + size;
        const double x1 = u <= size ? x + u : x + size, y1 = u <= size ? y : y + u - size;
        if (x1 - x0 <= 2 * inset) continue;
        out << "M" << one_decimal(x0 + inset) << " " << one_decimal(y0 - inset) << "L"
            << one_decimal(x1 - inset) << " " << one_decimal(y1 + inset);
    }
    out << "\"/>\n";
}

void write_cell(std::ostream& out, const WeightMap& map, const WeightRange& range,
                const SvgStyle& style, const std::string& label, std::size_t query, std::size_t key,
                double x, double y, double cell) {
    const float w = map.at(query, key);
    const bool blocked = map.is_blocked(query, key);
    const std::string fill =
        blocked ? masked_fill : hex(palette_colour(range.position(w), style.palette));
    out << "<rect" << class_attribute(style, blocked ? "cell masked" : "cell") << " x=\""
        << one_decimal(x) << "\" y=\"" << one_decimal(y) << "\" width=\"" << one_decimal(cell)
        << "\" height=\"" << one_decimal(cell) << "\" fill=\"" << fill
        << "\" stroke=\"none\" shape-rendering=\"crispEdges\"><title>"
        << xml_escaped(label + ": " + fixed(w, 4) + (blocked ? " (masked)" : ""))
        << "</title></rect>\n";
    if (blocked) write_hatch(out, x, y, cell);
}

void write_panel(std::ostream& out, const WeightMap& map, const std::vector<std::string>& rows,
                 const std::vector<std::string>& cols, const Geometry& g, const SvgStyle& style,
                 double x, double y) {
    const double left = x + g.label_width, top = y + g.head_height;
    const WeightRange range = weight_range(map, style.auto_scale);
    const std::string title = style.auto_scale ? map.title + " [" + range.text() + "]" : map.title;
    out << "<g" << class_attribute(style, "panel") << ">\n"
        << text_style(style, "title", g.labels_px) << " x=\"" << one_decimal(left) << "\" y=\""
        << one_decimal(y + 16) << "\">" << xml_escaped(title) << "</text>\n";
    for (std::size_t key = 0; key < map.cols; ++key) {
        // upright, centred on the middle of its own length above the column: ImageMagick turns
        // text the other way (+90 for -90), and centred it takes the same place
        const double cx = left + (double(key) + 0.5) * g.cell + 0.26 * g.labels_px;
        const double cy = top - 6 - label_length(cols[key], g.labels_px) / 2;
        out << text_style(style, "key", g.labels_px) << " transform=\"translate(" << one_decimal(cx)
            << "," << one_decimal(cy) << ") rotate(-90)\">" << xml_escaped(cols[key])
            << "</text>\n";
    }
    for (std::size_t query = 0; query < map.rows; ++query) {
        out << text_style(style, "query", g.labels_px) << " x=\"" << one_decimal(left - 6)
            << "\" y=\"" << one_decimal(top + (double(query) + 0.5) * g.cell + 4) << "\">"
            << xml_escaped(rows[query]) << "</text>\n";
        for (std::size_t key = 0; key < map.cols; ++key) {
            write_cell(out, map, range, style, rows[query] + " → " + cols[key], query, key,
                       left + double(key) * g.cell, top + double(query) * g.cell, g.cell);
        }
    }
    write_frame(out, style, left, top, double(map.cols) * g.cell, double(map.rows) * g.cell);
    out << "</g>\n";
}

void write_scale(std::ostream& out, const SvgStyle& style, bool any_masked, double x, double y,
                 double width) {
    constexpr int steps = 50;
    out << "<g" << class_attribute(style, "scale") << ">\n"
        << text_style(style, "title", 13) << " x=\"" << one_decimal(x) << "\" y=\""
        << one_decimal(y - 6) << "\">"
        << (style.auto_scale ? "attention weight, each panel from its own min to its max "
                               "(--scale auto)"
                             : "attention weight (fixed scale 0 to 1)")
        << "</text>\n";
    for (int s = 0; s < steps; ++s) {
        out << "<rect x=\"" << one_decimal(x + width * s / steps) << "\" y=\"" << one_decimal(y)
            << "\" width=\"" << one_decimal(width / steps + 0.5) << "\" height=\""
            << one_decimal(bar_height) << "\" fill=\""
            << hex(palette_colour((float(s) + 0.5f) / steps, style.palette))
            << "\" stroke=\"none\" shape-rendering=\"crispEdges\"/>\n";
    }
    write_frame(out, style, x, y, width, bar_height);
    for (int tick = 0; tick <= 4; ++tick) {
        const std::string label = !style.auto_scale ? fixed(tick / 4.0, 2)
                                  : tick == 0       ? "min"
                                  : tick == 4       ? "max"
                                                    : "";
        out << text_style(style, "tick", 13) << " x=\"" << one_decimal(x + width * tick / 4)
            << "\" y=\"" << one_decimal(y + bar_height + 14) << "\">" << label << "</text>\n";
    }
    if (any_masked) {
        const double at = x + width + 24;
        out << "<rect x=\"" << one_decimal(at) << "\" y=\"" << one_decimal(y) << "\" width=\""
            << one_decimal(bar_height) << "\" height=\"" << one_decimal(bar_height) << "\" fill=\""
            << masked_fill << "\" stroke=\"none\"/>\n";
        write_hatch(out, at, y, bar_height);
        write_frame(out, style, at, y, bar_height, bar_height);
        out << text_style(style, "plain", 13) << " x=\"" << one_decimal(at + bar_height + 6)
            << "\" y=\"" << one_decimal(y + 12) << "\">masked (weight 0 by the mask)</text>\n";
    }
    out << "</g>\n";
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
    const Geometry g = geometry(maps, row_labels, col_labels, style.auto_scale);
    const std::size_t grid_rows = (maps.size() + g.columns - 1) / g.columns;
    const double width = std::max(margin * 2 + double(g.columns) * g.panel_width, 560.0);
    const double caption_height = double(style.caption.size()) * caption_line;
    const double panels_top = margin + caption_height + 8;
    const double scale_top = panels_top + double(grid_rows) * g.panel_height + 24;
    const double height = scale_top + bar_height + 40;
    const double shown_width = std::min(width, max_display_width);
    if (style.standalone) out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    out << "<svg" << (style.standalone ? " xmlns=\"http://www.w3.org/2000/svg\"" : "")
        << " width=\"" << one_decimal(shown_width) << "\" height=\""
        << one_decimal(height * shown_width / width) << "\" viewBox=\"0 0 " << one_decimal(width)
        << " " << one_decimal(height) << "\">\n<rect width=\"" << one_decimal(width)
        << "\" height=\"" << one_decimal(height) << "\" fill=\"#ffffff\" stroke=\"none\"/>\n";
    for (std::size_t line = 0; line < style.caption.size(); ++line) {
        out << text_style(style, line == 0 ? "title" : "caption", 13) << " x=\""
            << one_decimal(margin) << "\" y=\""
            << one_decimal(margin + 8 + double(line) * caption_line) << "\">"
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
    for (const std::string& line : caption) caption_bytes += 6 * line.size() + 256;
    const std::uint64_t rows = row_labels.size(), cols = col_labels.size();
    // a masked cell's hatch: a path of at most 2·cell / hatch_step + 1 lines of 4 numbers
    const auto hatch_lines = std::uint64_t(2 * cell_size(rows, cols) / hatch_step) + 1;
    const std::uint64_t hatch_text = 96 + hatch_lines * (4 * 24 + 4);
    const std::uint64_t cell_text = 240 + 2 * 24 + hatch_text;
    constexpr std::uint64_t label_text = 240 + 2 * 24, fixed_text = 8192;
    const double panel = double(rows) * double(cols) * double(cell_text + row + col) +
                         double(rows) * double(label_text + row) +
                         double(cols) * double(label_text + col) + 1024;
    const double total = double(maps) * panel + double(fixed_text + caption_bytes);
    return total >= 1.8e19 ? std::uint64_t(1.8e19) : std::uint64_t(total);
}

}  // namespace mha
