#pragma once
// The colour scales of attention weights, shared by the terminal heatmap, the SVG and the
// HTML page. Both are computed (not tabulated) in the OKLab colour space with lightness
// rising evenly, so equal steps of weight look like equal steps of colour and the order
// survives colour-blindness and greyscale printing:
//   Screen: dark violet (0) through blue and teal to yellow (1), like viridis;
//   Print:  paper white (0) through pale yellow, green and teal to deep indigo (1).

#include <string>

namespace mha {

struct Rgb {
    int r, g, b;
};

enum class Palette { Screen, Print };

// t in [0, 1] (clamped; NaN gives the colour of 0).
Rgb palette_colour(float t, Palette palette = Palette::Screen);

// OKLab lightness of an sRGB colour: 0 black .. 1 white.
double lightness(const Rgb& colour);

// The 256-colour terminal's stand-in for the Screen palette: ten levels, one per 0.1 of t
// (the plain ramp's steps), each the xterm colour (cube 16..231 or grey 232..255) nearest to
// the level's colour among those lighter than the level below, so the levels stay distinct
// and their lightness rises.
int colour256_index(float t);

// The sRGB colour of an xterm 256-colour index in 16..255.
Rgb xterm_colour(int index);

// "#rrggbb"
std::string hex(const Rgb& colour);

}  // namespace mha
