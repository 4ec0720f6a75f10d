#pragma once
// Attention weights drawn in the terminal: queries as rows, keys as columns, one
// two-character cell per weight. Colour shading, or a plain character ramp that
// pipes and diffs cleanly; keys the mask hides are hatched (//), never shaded as
// weights. Panels sit side by side when the width allows, and a map too large for
// the screen is cut, with a line that says what was left out.

#include "show/weight_maps.h"

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

namespace mha {

enum class Shading { Plain, Colour256, TrueColour };

struct HeatmapStyle {
    std::size_t width = 80;     // terminal columns
    std::size_t max_rows = 48;  // queries shown per map
    Shading shading = Shading::Plain;
    std::size_t cell_width = 2;  // columns per weight: 2, or 1 for the compact model view
    bool narrow_to_fit = false;  // 1 column per weight when cell_width would cut keys off
    bool auto_scale = false;     // --scale auto: each map spans its own min..max, not 0..1
};

// The plain ramp: weight w in [0, 1] is ramp[min(9, floor(10·w))]; blank below 0.1.
// With auto_scale, w is first placed on its map's own min..max.
inline constexpr const char* plain_ramp = " .:-=+*#%@";

// A key the mask hides (WeightMap::blocked) is drawn with this character in every shading
// (grey when coloured), and the legend says so.
inline constexpr char masked_char = '/';

// One weight's cell, cell_width columns wide: a shade of the colour scale, or the plain
// ramp's character; a key the mask hides is hatched. For views that lay out maps of their own.
std::string heatmap_cell(float weight, bool masked, Shading shading, std::size_t cell_width);

// row_labels: one per query ("3 sat"); key columns are numbered 0..M-1.
void draw_heatmaps(std::ostream& out, const std::vector<WeightMap>& maps,
                   const std::vector<std::string>& row_labels, const HeatmapStyle& style);

}  // namespace mha
