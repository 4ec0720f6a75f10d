// The colour scales: OKLab lightness, chroma and hue interpolated between a few control
// points of our own, converted to sRGB (Björn Ottosson's OKLab matrices), clamped to gamut.

#include "show/palette.h"

#include <array>
#include <cmath>
#include <cstdio>

namespace mha {

namespace {

constexpr double pi = 3.14159265358979323846;

// A point of a scale: at t, OKLab lightness L, chroma C and hue h (degrees).
struct ControlPoint {
    double t, lightness, chroma, hue;
};

// Lightness rises by 0.65 in even steps; the hue turns violet -> blue -> teal -> green ->
// yellow, the order that stays readable for red-green colour-blindness.
constexpr ControlPoint screen_points[] = {{0.0, 0.27, 0.10, 305},
                                          {0.25, 0.42, 0.10, 275},
                                          {0.5, 0.58, 0.085, 200},
                                          {0.75, 0.74, 0.14, 150},
                                          {1.0, 0.92, 0.17, 108}};

// Lightness falls from paper white, so a page of small weights takes little ink.
constexpr ControlPoint print_points[] = {{0.0, 0.985, 0.01, 100},
                                         {0.2, 0.93, 0.09, 105},
                                         {0.45, 0.80, 0.12, 150},
                                         {0.7, 0.60, 0.10, 215},
                                         {1.0, 0.35, 0.13, 285}};

struct Lab {
    double l, a, b;
};

double encoded(double linear) {  // linear light -> sRGB 0..255
    const double x = std::fmin(1.0, std::fmax(0.0, linear));
    return 255.0 * (x <= 0.0031308 ? 12.92 * x : 1.055 * std::pow(x, 1 / 2.4) - 0.055);
}

double decoded(int channel) {  // sRGB 0..255 -> linear light
    const double c = channel / 255.0;
    return c <= 0.04045 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4);
}

Rgb to_rgb(const Lab& lab) {
    const double l = std::pow(lab.l + 0.3963377774 * lab.a + 0.2158037573 * lab.b, 3);
    const double m = std::pow(lab.l - 0.1055613458 * lab.a - 0.0638541728 * lab.b, 3);
    const double s = std::pow(lab.l - 0.0894841775 * lab.a - 1.2914855480 * lab.b, 3);
    return {int(std::lround(encoded(4.0767416621 * l - 3.3077115913 * m + 0.2309699292 * s))),
            int(std::lround(encoded(-1.2684380046 * l + 2.6097574011 * m - 0.3413193965 * s))),
            int(std::lround(encoded(-0.0041960863 * l - 0.7034186147 * m + 1.7076147010 * s)))};
}

Lab to_lab(const Rgb& c) {
    const double r = decoded(c.r), g = decoded(c.g), b = decoded(c.b);
    const double l = std::cbrt(0.4122214708 * r + 0.5363325363 * g + 0.0514459929 * b);
    const double m = std::cbrt(0.2119034982 * r + 0.6806995451 * g + 0.1073969566 * b);
    const double s = std::cbrt(0.0883024619 * r + 0.2817188376 * g + 0.6299787005 * b);
    return {0.2104542553 * l + 0.7936177850 * m - 0.0040720468 * s,
            1.9779984951 * l - 2.4285922050 * m + 0.4505937099 * s,
            0.0259040371 * l + 0.7827717662 * m - 0.8086757660 * s};
}

double distance(const Lab& x, const Lab& y) {
    return std::hypot(x.l - y.l, std::hypot(x.a - y.a, x.b - y.b));
}

template <std::size_t Count>
Rgb along(const ControlPoint (&points)[Count], double t) {
    for (std::size_t i = 1; i < Count; ++i) {
        if (t > points[i].t && i + 1 < Count) continue;
        const ControlPoint& low = points[i - 1];
        const ControlPoint& high = points[i];
        const double u = (t - low.t) / (high.t - low.t);
        const double chroma = low.chroma + (high.chroma - low.chroma) * u;
        const double hue = (low.hue + (high.hue - low.hue) * u) * pi / 180.0;
        return to_rgb({low.lightness + (high.lightness - low.lightness) * u, chroma * std::cos(hue),
                       chroma * std::sin(hue)});
    }
    return to_rgb({points[0].lightness, 0.0, 0.0});  // unreachable: Count >= 2
}

constexpr int terminal_levels = 10;

std::array<int, terminal_levels> choose_levels() {
    std::array<int, terminal_levels> chosen{};
    double floor = -1.0;  // the lightness a level must exceed
    for (int level = 0; level < terminal_levels; ++level) {
        const Lab target = to_lab(palette_colour(float(level) / (terminal_levels - 1)));
        double best = 1e9;
        for (int index = 16; index <= 255; ++index) {
            const Lab candidate = to_lab(xterm_colour(index));
            if (candidate.l <= floor + 0.01) continue;
            const double d = distance(candidate, target);
            if (d < best) {
                best = d;
                chosen[level] = index;
            }
        }
        floor = to_lab(xterm_colour(chosen[level])).l;
    }
    return chosen;
}

}  // namespace

Rgb palette_colour(float t, Palette palette) {
    const double x = std::isnan(t) ? 0.0 : std::fmin(1.0, std::fmax(0.0, double(t)));
    return palette == Palette::Screen ? along(screen_points, x) : along(print_points, x);
}

double lightness(const Rgb& colour) { return to_lab(colour).l; }

int colour256_index(float t) {
    static const std::array<int, terminal_levels> chosen = choose_levels();
    const double x = std::isnan(t) ? 0.0 : std::fmin(1.0, std::fmax(0.0, double(t)));
    return chosen[std::size_t(std::fmin(terminal_levels - 1, std::floor(x * terminal_levels)))];
}

Rgb xterm_colour(int index) {
    if (index >= 232) {
        const int grey = 8 + 10 * (index - 232);
        return {grey, grey, grey};
    }
    static constexpr int cube[] = {0, 95, 135, 175, 215, 255};
    const int i = index - 16;
    return {cube[i / 36], cube[(i / 6) % 6], cube[i % 6]};
}

std::string hex(const Rgb& c) {
    char text[8];
    std::snprintf(text, sizeof text, "#%02x%02x%02x", c.r, c.g, c.b);
    return text;
}

}  // namespace mha
