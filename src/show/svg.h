#pragma once
// The heatmaps as one standalone SVG document, written by hand: a titled panel per
// map with token or position labels, one <rect class="cell"> per weight (with a
// <title> tooltip giving its value), and a colour scale from 0 to 1.

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "show/weight_maps.h"

namespace mha {

// labels: one per position ("3 sat"); rows are queries, columns keys.
void write_svg(std::ostream& out, const std::vector<WeightMap>& maps,
               const std::vector<std::string>& row_labels,
               const std::vector<std::string>& col_labels, const std::string& caption);

// At least as many bytes as write_svg writes for `maps` panels of (rows, cols) cells with
// these labels, before any weight is computed (the longest label stands for every label).
std::uint64_t svg_size_bound(std::size_t maps, const std::vector<std::string>& row_labels,
                             const std::vector<std::string>& col_labels,
                             const std::string& caption);

// & < > " ' as XML entities.
std::string xml_escaped(const std::string& text);

}  // namespace mha
