// The SVG of --export-svg rendered by librsvg (rsvg-convert) and by ImageMagick's own renderer
// (convert-im6.q16): every cell of every panel sampled against the colour the file gives it,
// every masked cell hatched (grey lines on white, neither solid black nor blank). Needs
// librsvg2-bin and imagemagick (make check installs them); without them it says it is skipped.

#include <catch2/catch.hpp>

#include "helpers.h"
#include "svg_rendering.h"

namespace test_svg_render {

namespace {

constexpr int colour_tolerance = 24;  // per channel, at a cell's centre
// a masked cell's interior, mean of the three channels: white gaps and #b0b0b0 lines
constexpr double hatched_darkest_mean = 190, hatched_lightest_mean = 250;

struct Cell {
    double x, y, size;
    int red, green, blue;
    bool masked;
};

// Every cell of the file: a <rect> with a <title>, its fill, masked when its title says so.
std::vector<Cell> cells_of(const std::string& svg) {
    static const std::regex cell(
        "<rect x=\"([0-9.]+)\" y=\"([0-9.]+)\" width=\"([0-9.]+)\" height=\"[0-9.]+\" "
        "fill=\"#([0-9a-f]{6})\"[^>]*><title>[^<]*?( \\(masked\\))?</title>");
    std::vector<Cell> cells;
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), cell); it != std::sregex_iterator();
         ++it) {
        const std::string fill = (*it)[4];
        cells.push_back({std::stod((*it)[1]), std::stod((*it)[2]), std::stod((*it)[3]),
                         std::stoi(fill.substr(0, 2), nullptr, 16),
                         std::stoi(fill.substr(2, 2), nullptr, 16),
                         std::stoi(fill.substr(4, 2), nullptr, 16), (*it)[5].matched});
    }
    return cells;
}

// The width attribute over the viewBox's width: px of the picture per unit of the drawing.
double scale_of(const std::string& svg) {
    const std::size_t width = svg.find(" width=\"", svg.find("<svg"));
    const std::size_t view = svg.find("viewBox=\"0 0 ");
    return std::stod(svg.substr(width + 8)) / std::stod(svg.substr(view + 13));
}

// How many cells the renderer drew wrong; each one is reported.
std::size_t wrong_cells(const test::Image& image, const std::vector<Cell>& cells, double scale,
                        const std::string& renderer) {
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < cells.size(); ++i) {
        const Cell& c = cells[i];
        const auto px = [&](double v) { return std::size_t(v * scale); };
        if (px(c.x + c.size) >= image.width || px(c.y + c.size) >= image.height) {
            ++wrong;
            continue;
        }
        bool right = true;
        if (!c.masked) {
            const std::size_t cx = px(c.x + c.size / 2), cy = px(c.y + c.size / 2);
            const int expected[] = {c.red, c.green, c.blue};
            for (std::size_t ch = 0; ch < 3; ++ch)
                right = right && std::abs(image.at(cx, cy, ch) - expected[ch]) <= colour_tolerance;
        } else {  // the interior, a pixel in from the edges: mean between lines and gaps
            double sum = 0, darkest = 255, lightest = 0, count = 0;
            for (std::size_t y = px(c.y) + 1; y + 1 < px(c.y + c.size); ++y) {
                for (std::size_t x = px(c.x) + 1; x + 1 < px(c.x + c.size); ++x) {
                    const double mean =
                        (image.at(x, y, 0) + image.at(x, y, 1) + image.at(x, y, 2)) / 3.0;
                    sum += mean;
                    darkest = std::min(darkest, mean);
                    lightest = std::max(lightest, mean);
                    ++count;
                }
            }
            const double mean = sum / count;
            right = mean >= hatched_darkest_mean && mean <= hatched_lightest_mean &&
                    darkest < 215 && lightest > 240;
        }
        if (!right) {
            if (wrong < 3)
                UNSCOPED_INFO(renderer << ": cell " << i << " at (" << c.x << ", " << c.y << ")"
                                       << (c.masked ? " (masked)" : "") << " is drawn wrong");
            ++wrong;
        }
    }
    return wrong;
}

bool tools_present() {
    return test::run_command(
               "command -v rsvg-convert >/dev/null && command -v convert-im6.q16 "
               ">/dev/null")
               .status == 0;
}

}  // namespace

TEST_CASE("the SVG renders the same in librsvg and ImageMagick: cells, masks, panels",
          "[svg-render]") {
    if (!tools_present()) {
        WARN(
            "skipped: rsvg-convert (librsvg2-bin) or convert-im6.q16 (imagemagick) is missing; "
            "make check installs them");
        return;
    }
    const std::string options =
        GENERATE(as<std::string>{}, "--text 'a b c d e' --demo-heads",
                 // 8 panels of 20 x 20: ImageMagick once gave up a few hundred elements in
                 "--model ../examples/models/kjv-2x4.npz --text 'In the beginning God'");
    CAPTURE(options);
    const std::string svg_path = test::temp_path("render.svg"), png = test::temp_path("render.png"),
                      ppm = test::temp_path("render.ppm");
    REQUIRE(test::run_mha(options + " --export-svg " + svg_path + " > /dev/null").status == 0);
    const std::string svg = test::read_text(svg_path);
    const std::vector<Cell> cells = cells_of(svg);
    REQUIRE(cells.size() >= 100);
    REQUIRE(std::count_if(cells.begin(), cells.end(), [](const Cell& c) { return c.masked; }) > 10);

    for (const auto& [renderer, command] : test::svg_renderers(svg_path, png, ppm)) {
        CAPTURE(renderer);
        const test::RunResult run = test::run_command(command + " 2>&1");
        CHECK(run.output.empty());  // ImageMagick's complaints ("nested too deeply") included
        REQUIRE(run.status == 0);
        CHECK(wrong_cells(test::read_ppm(ppm), cells, scale_of(svg), renderer) == 0);
    }
    for (const std::string& path : {svg_path, png, ppm}) std::remove(path.c_str());
}

}  // namespace test_svg_render
