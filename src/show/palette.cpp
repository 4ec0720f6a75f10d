// The colour scale: straight lines between four anchor colours.

#include "show/palette.h"

#include <cmath>
#include <cstdio>

namespace mha {

namespace {

struct Anchor {
    float at;
    Rgb colour;
};

constexpr Anchor anchors[] = {
    {0.0f, {18, 16, 38}}, {0.3f, {84, 44, 140}}, {0.65f, {206, 74, 98}}, {1.0f, {255, 224, 120}}};

int mix(int a, int b, float t) { return int(std::lround(float(a) + (float(b) - float(a)) * t)); }

int cube_level(int channel) { return int(std::lround(float(channel) * 5.0f / 255.0f)); }

}  // namespace

Rgb weight_colour(float weight) {
    const float w = std::isnan(weight) ? 0.0f : std::fmin(1.0f, std::fmax(0.0f, weight));
    for (std::size_t i = 1; i < std::size(anchors); ++i) {
        if (w <= anchors[i].at) {
            const Anchor& low = anchors[i - 1];
            const Anchor& high = anchors[i];
            const float t = (w - low.at) / (high.at - low.at);
            return {mix(low.colour.r, high.colour.r, t), mix(low.colour.g, high.colour.g, t),
                    mix(low.colour.b, high.colour.b, t)};
        }
    }
    return anchors[std::size(anchors) - 1].colour;
}

std::string hex(const Rgb& c) {
    char text[8];
    std::snprintf(text, sizeof text, "#%02x%02x%02x", c.r, c.g, c.b);
    return text;
}

int cube_index(const Rgb& c) {
    return 16 + 36 * cube_level(c.r) + 6 * cube_level(c.g) + cube_level(c.b);
}

}  // namespace mha
