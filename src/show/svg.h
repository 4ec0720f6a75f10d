#pragma once
// The heatmaps as one standalone SVG document, written by hand: a caption, a titled panel
// per map with token or position labels, one <rect class="cell"> per weight (with a
// <title> tooltip giving its value), masked cells hatched with drawn lines, and a colour scale;
// presentation attributes only (no CSS, no pattern), for librsvg and ImageMagick. Cells are
// 26 px for small maps and shrink for large ones (to 12 px); the width attribute is at most
// 1280 px, the height in proportion, and the viewBox holds the whole drawing.

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "show/palette.h"
#include "show/weight_maps.h"

namespace mha {

struct SvgStyle {
    std::vector<std::string> caption;  // lines above the panels: what, the sentence, sizes
    Palette palette = Palette::Print;  // light, for paper and slides
    bool auto_scale = false;           // --scale auto: each panel spans its own min..max
    bool standalone = true;            // false inside an HTML page: no XML declaration, no xmlns
};

// labels: one per position ("3 sat"); rows are queries, columns keys.
void write_svg(std::ostream& out, const std::vector<WeightMap>& maps,
               const std::vector<std::string>& row_labels,
               const std::vector<std::string>& col_labels, const SvgStyle& style);

// At least as many bytes as write_svg writes for `maps` panels of (rows, cols) cells with
// these labels, before any weight is computed (the longest label stands for every label).
std::uint64_t svg_size_bound(std::size_t maps, const std::vector<std::string>& row_labels,
                             const std::vector<std::string>& col_labels,
                             const std::vector<std::string>& caption);

// The SVG's and the HTML page's sanitiser: the terminal's (io/printable.h, newlines and tabs
// kept) so the XML stays well-formed, then & < > " ' as XML entities.
std::string xml_escaped(const std::string& text);

}  // namespace mha
