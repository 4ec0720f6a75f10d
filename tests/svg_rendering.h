// An SVG rendered to pixels by librsvg (rsvg-convert) and by ImageMagick's own renderer
// (convert-im6.q16), read back as a binary PPM, for the tests that sample its colours.
#pragma once

#include <catch2/catch.hpp>

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "helpers.h"

namespace test {

struct Image {
    std::size_t width = 0, height = 0;
    std::vector<unsigned char> rgb;  // (height, width, 3)
    int at(std::size_t x, std::size_t y, std::size_t channel) const {
        return rgb[(y * width + x) * 3 + channel];
    }
};

// A binary PPM (P6, maxval 255), as convert-im6.q16 writes it.
inline Image read_ppm(const std::string& path) {
    std::istringstream in(read_text(path));
    std::string magic;
    int maxval = 0;
    Image image;
    in >> magic >> image.width >> image.height >> maxval;
    REQUIRE(magic == "P6");
    REQUIRE(maxval == 255);
    in.get();
    image.rgb.resize(image.width * image.height * 3);
    in.read(reinterpret_cast<char*>(image.rgb.data()), std::streamsize(image.rgb.size()));
    REQUIRE(in.gcount() == std::streamsize(image.rgb.size()));
    return image;
}

// Each renderer's name and the shell command that turns `svg` into the PPM `ppm` (librsvg
// through the PNG `png`).
inline std::vector<std::pair<std::string, std::string>> svg_renderers(const std::string& svg,
                                                                      const std::string& png,
                                                                      const std::string& ppm) {
    return {{"librsvg", "rsvg-convert -o " + png + " " + svg + " && convert-im6.q16 " + png +
                            " -depth 8 " + ppm},
            {"ImageMagick", "convert-im6.q16 " + svg + " -depth 8 " + ppm}};
}

}  // namespace test
