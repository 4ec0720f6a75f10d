#pragma once
// The colour scale of attention weights, shared by the terminal heatmap and the SVG:
// dark ink for 0 through violet and rose to pale amber for 1.

#include <string>

namespace mha {

struct Rgb {
    int r, g, b;
};

// weight in [0, 1] (clamped; NaN gives the colour of 0).
Rgb weight_colour(float weight);

// "#rrggbb"
std::string hex(const Rgb& colour);

// The nearest of the 6×6×6 colour cube of a 256-colour terminal: an index in 16..231.
int cube_index(const Rgb& colour);

}  // namespace mha
