// Tests for the attention views: the plain heatmap against golden files, colour
// only for terminals, the SVG as well-formed XML with one cell per weight, the
// per-head summary, and the command-line options around them.

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "app/cli/terminal.h"
#include "helpers.h"
#include "io/npy.h"
#include "show/head_summary.h"
#include "show/heatmap.h"
#include "show/palette.h"
#include "show/svg.h"
#include "show/text_layout.h"
#include "show/weight_maps.h"
#include "xml_checker.h"

namespace test_heatmap {

using namespace mha;

namespace {

// A 3 x 3 head, written out by hand, and its mirror image.
std::vector<WeightMap> small_maps() {
    WeightMap a{"head 0", 3, 3, {1.0f, 0.0f, 0.0f, 0.5f, 0.5f, 0.0f, 0.05f, 0.35f, 0.6f}, {}};
    WeightMap b{"head 1", 3, 3, {0.0f, 0.0f, 1.0f, 0.0f, 0.75f, 0.25f, 0.95f, 0.04f, 0.01f}, {}};
    return {a, b};
}

std::size_t count_of(const std::string& text, const std::string& what) {
    std::size_t count = 0;
    for (std::size_t i = text.find(what); i != std::string::npos; i = text.find(what, i + 1))
        ++count;
    return count;
}

const std::string demo_args =
    "--text 'The cat that I saw yesterday sat on the mat' --demo-heads --heatmap";

}  // namespace

TEST_CASE("plain heatmap of a small case matches its golden file") {
    std::ostringstream wide, narrow;
    draw_heatmaps(wide, small_maps(), position_labels(3, {"a", "b", "c"}), HeatmapStyle{});
    CHECK(wide.str() == test::read_text("data/golden/heatmap_small.txt"));
    HeatmapStyle tight;
    tight.width = 10;
    tight.max_rows = 2;
    draw_heatmaps(narrow, small_maps(), position_labels(3, {"a", "b", "c"}), tight);
    CHECK(narrow.str() == test::read_text("data/golden/heatmap_cut.txt"));
}

TEST_CASE("the demo heads' plain heatmap in 80 columns matches its golden file") {
    const test::RunResult r =
        test::run_command("COLUMNS=80 " + test::mha_binary() + " " + demo_args + " 2>&1");
    REQUIRE(r.status == 0);
    const std::size_t summary = r.output.find("\nscores,");
    const std::size_t begin = r.output.find("attention weights");
    REQUIRE(summary != std::string::npos);
    REQUIRE(begin != std::string::npos);
    CHECK(summary < begin);  // the output ends on the picture
    CHECK(r.output.substr(begin) == test::read_text("data/golden/demo_heads_80.txt"));
    std::istringstream lines(r.output);
    for (std::string line; std::getline(lines, line);) CHECK(display_width(line) <= 80);
}

TEST_CASE("colour only when stdout is a terminal and NO_COLOR is unset") {
    CHECK(choose_shading(ColorChoice::Auto, false, nullptr, nullptr) == Shading::Plain);
    CHECK(choose_shading(ColorChoice::Auto, true, nullptr, nullptr) == Shading::Colour256);
    CHECK(choose_shading(ColorChoice::Auto, true, "1", nullptr) == Shading::Plain);
    CHECK(choose_shading(ColorChoice::Auto, true, "", "truecolor") == Shading::TrueColour);
    CHECK(choose_shading(ColorChoice::Always, false, "1", "24bit") == Shading::TrueColour);
    CHECK(choose_shading(ColorChoice::Never, true, nullptr, nullptr) == Shading::Plain);
    CHECK(terminal_width("120", false) == 120);
    CHECK(terminal_width("wide", false) == 80);
    CHECK(terminal_width(nullptr, false) == 80);

    const test::RunResult piped = test::run_mha(demo_args);  // stdout is a pipe here
    CHECK(piped.status == 0);
    CHECK(piped.output.find('\x1b') == std::string::npos);
    const test::RunResult forced = test::run_mha(demo_args + " --color always");
    CHECK(forced.output.find("\x1b[48;") != std::string::npos);
}

TEST_CASE("the SVG is well-formed XML with one cell per weight and escaped labels") {
    const std::string path = test::temp_path("heads.svg");
    const test::RunResult r =
        test::run_mha("--text 'if a < b & c > \"d\" then' --demo-heads --export-svg " + path +
                      " --head 0 --head 2 --head mean");
    REQUIRE(r.status == 0);
    const std::string svg = test::read_text(path);
    std::remove(path.c_str());
    CHECK(test::XmlChecker(svg).well_formed());
    CHECK(count_of(svg, "</title></rect>") == 3 * 11 * 11);  // 3 maps of 11 x 11 tokens
    CHECK(count_of(svg, "<g>\n") == 3 + 1);                   // the panels and the scale
    // for ImageMagick's own renderer: no CSS, no pattern, no class (docs/heatmaps.md)
    CHECK(count_of(svg, "<style") + count_of(svg, "url(#") + count_of(svg, "class=") == 0);
    CHECK_THAT(svg, Catch::Contains("2 &lt;") && Catch::Contains("4 &amp;") &&
                        Catch::Contains("head 2: same token") &&
                        Catch::Contains("mean of 4 heads"));
    CHECK_FALSE(test::XmlChecker("<svg><g></svg></g>").well_formed());
    CHECK_FALSE(test::XmlChecker("<svg><text>a < b</text></svg>").well_formed());
    CHECK_FALSE(test::XmlChecker("<svg x=1></svg>").well_formed());
}

TEST_CASE(
    "the SVG's size: 26 px cells for small maps, smaller for large ones, shown at most "
    "1280 px wide with the whole drawing in the viewBox",
    "[svg]") {
    const std::string path = test::temp_path("size.svg");
    // "<svg ... width="W" height="H" viewBox="0 0 VW VH">" and the first cell's width
    struct Size {
        double width, height, view_width, view_height, cell;
    };
    const auto size_of = [&](const std::string& options) {
        REQUIRE(test::run_mha(options + " --export-svg " + path).status == 0);
        const std::string svg = test::read_text(path);
        std::remove(path.c_str());
        const auto number_after = [&](const std::string& text, const std::string& key) {
            const std::size_t at = text.find(key);
            REQUIRE(at != std::string::npos);
            return std::stod(text.substr(at + key.size()));
        };
        const std::string root = svg.substr(svg.find("<svg"), svg.find('>', svg.find("<svg")));
        const std::string view = root.substr(root.find("viewBox=\"0 0 ") + 13);
        const double view_width = std::stod(view);
        const double view_height = std::stod(view.substr(view.find(' ') + 1));
        const std::string first_cell = svg.substr(svg.rfind("<rect", svg.find("><title>")));
        return Size{number_after(root, " width=\""), number_after(root, " height=\""), view_width,
                    view_height, number_after(first_cell, "width=\"")};
    };
    // 3 tokens, 2 heads: drawn at its own size, 26 px a weight
    const Size small = size_of("-b 1 -n 3 -d 8 -H 2");
    CHECK(small.cell == 26.0);
    CHECK(small.width == small.view_width);
    CHECK(small.height == small.view_height);
    // 64 tokens, 8 heads: 640 px / 64 = 10 px, held at 12; shown 1280 px wide, in proportion
    const Size large = size_of("-b 1 -n 64 -d 64 -H 8");
    CHECK(large.cell == 12.0);
    CHECK(large.width == 1280.0);
    CHECK(large.view_width > 1280.0);
    CHECK(large.height == Approx(large.view_height * 1280.0 / large.view_width).margin(0.1));
    // 40 tokens: 640 / 40 = 16 px
    CHECK(size_of("-b 1 -n 40 -d 16 -H 2").cell == 16.0);
}

TEST_CASE("the mean map averages the heads, as average_attn_weights does") {
    // (B=1, h=2, N=1, M=2): heads [1, 0] and [0.5, 0.5] average to [0.75, 0.25]
    const Tensor weights({1, 2, 1, 2}, {1.0f, 0.0f, 0.5f, 0.5f});
    const std::vector<WeightMap> maps = weight_maps(weights, MapChoice{{1}, true, {}});
    REQUIRE(maps.size() == 2);
    CHECK(maps[0].title == "head 1");
    CHECK(maps[0].values == std::vector<float>{0.5f, 0.5f});
    CHECK(maps[1].values == std::vector<float>{0.75f, 0.25f});
}

TEST_CASE("head summary: entropy and the peak key per query") {
    // head 0 rows: [1, 0] (entropy 0, peak 0) and [0.5, 0.5] (ln 2, even);
    // head 1 rows: [0.25, 0.75] (peak 1) and [NaN, NaN] (left out, no peak)
    const float nan = std::nanf("");
    const Tensor weights({1, 2, 2, 2}, {1.0f, 0.0f, 0.5f, 0.5f, 0.25f, 0.75f, nan, nan});
    const std::vector<HeadPattern> p = head_patterns(weights);
    CHECK(p[0].mean_entropy == Approx(std::log(2.0) / 2));
    CHECK(p[0].peaks == std::vector<std::size_t>{0, no_peak});
    CHECK(p[1].mean_entropy == Approx(-(0.25 * std::log(0.25) + 0.75 * std::log(0.75))));
    CHECK(p[1].peaks == std::vector<std::size_t>{1, no_peak});
}

TEST_CASE("scaling made visible: variance about d_k before the scale, about 1 after") {
    const test::RunResult scaled = test::run_mha("--summary -b 4 -n 32");
    CHECK_THAT(scaled.output,
               Catch::Matches("(.|\n)*variance 6[0-9]\\.[0-9]+ from q·k \\(d_k = 64\\), "
                              "(0\\.9|1\\.0)[0-9]\\s+after / sqrt\\(d_k\\)(.|\n)*"));
    const test::RunResult unscaled = test::run_mha("--no-scale -b 4 -n 32");
    CHECK_THAT(unscaled.output, Catch::Contains("not scaled") && Catch::Contains("(--no-scale)"));
    CHECK_THAT(scaled.output, Catch::Contains(" 0 of 512 rows"));  // B·h·N = 4·4·32
    CHECK_THAT(unscaled.output, !Catch::Contains(" 0 of 512 rows"));
}

TEST_CASE("--ablate-head reports the relative change of the output") {
    const test::RunResult r = test::run_mha(demo_args + " --ablate-head 1");
    REQUIRE(r.status == 0);
    CHECK_THAT(r.output,
               Catch::Contains("ablating head 1 (its context zeroed before W_o) changes"));
    CHECK_THAT(r.output, !Catch::Contains("by 0.00%"));  // W_o is the identity: head 1 matters
    const test::RunResult normal = test::run_mha(demo_args);
    const auto output_line = [](const std::string& text) {
        return text.substr(text.find("output ("), text.find("wall time") - text.find("output ("));
    };
    CHECK(output_line(r.output) == output_line(normal.output));  // the reported run is not ablated
}

TEST_CASE("bad view options: one line on stderr, exit status 2") {
    const auto [args, message] = GENERATE(table<std::string, std::string>({
        {"--demo-heads", "--demo-heads needs --text"},
        {"--text 'a b' --demo-heads -H 2", "needs --heads 4"},
        {"--text 'a b' --demo-heads -d 128", "at least 256"},
        {"--text 'a b' --demo-heads --weights data/parity/self_bias/weights.npz",
         "cannot be combined with --weights"},
        {"--text '  '", "--text has no words"},
        {"--text 'a b' -d 10 -H 2", "multiple of 4"},
        {"--text 'a b' -n 3", "--seq-len 3 disagrees with --text"},
        {"--text 'a b' --input data/parity/self_bias/query.npy", "cannot be combined with --input"},
        {"--heatmap --head 4", "--head 4 is not a head: the heads are 0..3"},
        {"--heatmap --head first", "--head expects a whole number"},
        {"--head 1", "--head picks what --heatmap, --export-svg and --format html draw"},
        {"--ablate-head 9", "cannot ablate head 9"},
        {"--heatmap --format json", "use them with --format text"},
        {"--heatmap --color sometimes",
         "--color expects one of 256, always, auto, never, truecolor"},
        {"--export-svg /nonexistent-dir/heads.svg", "/nonexistent-dir/heads.svg"},
    }));
    test::check_rejected(args, message);
}

TEST_CASE("the palettes rise evenly in lightness and tell 0.125 from 0.25", "[palette]") {
    // every 0.01: the screen palette gets lighter, the print palette darker (finer steps
    // than this come within the rounding of 8-bit channels)
    double screen = -1.0, print = 2.0;
    for (int i = 0; i <= 100; ++i) {
        const float t = float(i) / 100.0f;
        const double s = lightness(palette_colour(t, Palette::Screen));
        const double p = lightness(palette_colour(t, Palette::Print));
        INFO("t = " << t);
        CHECK(s > screen);
        CHECK(p < print);
        screen = s;
        print = p;
    }
    // perceptually even: no tenth of the scale changes lightness by more than twice another
    double smallest = 1.0, largest = 0.0;
    for (int i = 0; i < 10; ++i) {
        const double step =
            lightness(palette_colour(float(i + 1) / 10)) - lightness(palette_colour(float(i) / 10));
        smallest = std::min(smallest, step);
        largest = std::max(largest, step);
    }
    CHECK(largest < 2 * smallest);
    CHECK(hex(palette_colour(0.125f)) != hex(palette_colour(0.25f)));
    CHECK(colour256_index(0.125f) != colour256_index(0.25f));
    CHECK(palette_colour(std::nanf("")).r == palette_colour(0.0f).r);
    CHECK(lightness(palette_colour(0.0f, Palette::Print)) > 0.95);  // zero is paper, not ink
}

TEST_CASE("the 256-colour heatmap has ten levels of rising lightness", "[palette]") {
    std::vector<int> levels;
    for (int i = 0; i < 10; ++i) levels.push_back(colour256_index((float(i) + 0.5f) / 10));
    for (std::size_t i = 1; i < levels.size(); ++i) {
        INFO("level " << i << ": " << levels[i - 1] << " then " << levels[i]);
        CHECK(lightness(xterm_colour(levels[i])) > lightness(xterm_colour(levels[i - 1])));
    }
    CHECK(colour256_index(0.0f) == levels.front());
    CHECK(colour256_index(1.0f) == levels.back());
    // the xterm cube: index 16 + 36 r + 6 g + b over levels 0, 95, 135, 175, 215, 255
    CHECK(xterm_colour(16 + 36 * 5 + 6 * 1 + 0).g == 95);
    CHECK(xterm_colour(232).r == 8);
    CHECK(xterm_colour(255).r == 238);
}

TEST_CASE("--color 256 and truecolor force the depth", "[palette]") {
    CHECK(choose_shading(ColorChoice::Force256, false, "1", "truecolor") == Shading::Colour256);
    CHECK(choose_shading(ColorChoice::ForceTrueColour, false, nullptr, nullptr) ==
          Shading::TrueColour);
    const test::RunResult full = test::run_mha(demo_args + " --color truecolor");
    CHECK_THAT(full.output, Catch::Contains("\x1b[48;2;"));
    const test::RunResult cube = test::run_command("COLORTERM=truecolor " + test::mha_binary() +
                                                   " " + demo_args + " --color 256");
    CHECK_THAT(cube.output, Catch::Contains("\x1b[48;5;") && !Catch::Contains("\x1b[48;2;"));
}

TEST_CASE("--scale auto spans each map's own min..max, masked keys left out", "[scale]") {
    // head 0 of small_maps: weights 0 .. 1; a flat head 0.2 .. 0.3 with one masked key
    WeightMap flat{"head 2", 2, 2, {0.2f, 0.3f, 0.255f, 0.0f}, {false, false, false, true}};
    const WeightRange range = weight_range(flat, true);
    CHECK(range.low == 0.2f);
    CHECK(range.high == 0.3f);
    CHECK(range.position(0.25f) == Approx(0.5f));
    CHECK(range.position(0.255f) == Approx(0.55f));
    CHECK(weight_range(flat, false).position(0.25f) == 0.25f);  // fixed: 0..1
    CHECK(WeightRange{0.5f, 0.5f}.position(0.5f) == 0.5f);      // all equal: the middle

    std::ostringstream out;
    HeatmapStyle style;
    style.auto_scale = true;
    draw_heatmaps(out, {flat}, position_labels(2, {}), style);
    CHECK_THAT(out.str(), Catch::Contains("scale: min [") &&
                              Catch::Contains("(--scale auto: each map from its own min") &&
                              Catch::Contains("head 2 [0.2000..0.3000]"));
    // 0.2 is the bottom of the ramp (blank), 0.3 the top ('@'), 0.255 at 0.55 ('+'); the
    // masked key is hatched, whatever its weight
    CHECK_THAT(out.str(), Catch::Contains("\n0    @@\n1  ++//\n"));

    const test::RunResult r = test::run_mha("--heatmap --scale auto -b 1 -n 4 -d 16 -H 2");
    REQUIRE(r.status == 0);
    CHECK_THAT(r.output, Catch::Contains("--scale auto") && Catch::Contains("head 1 ["));
}

TEST_CASE("masked keys are hatched in the terminal, never shaded as a weight of 0", "[heatmap]") {
    // query 0 cannot see key 1 (masked); query 1 gives key 0 the weight 0 (not masked)
    const WeightMap causal{"head 0", 2, 2, {1.0f, 0.0f, 0.0f, 1.0f}, {false, true, false, false}};
    const std::string legend = " a key the mask hides (weight 0 by the mask, not by the scores)\n";
    std::ostringstream plain;
    draw_heatmaps(plain, {causal}, position_labels(2, {}), HeatmapStyle{});
    CHECK_THAT(plain.str(), Catch::Contains("\nmasked: //" + legend));
    CHECK_THAT(plain.str(), Catch::EndsWith("\n0  @@//\n1    @@\n"));
    for (const Shading shading : {Shading::Colour256, Shading::TrueColour}) {
        HeatmapStyle style;
        style.shading = shading;
        std::ostringstream coloured;
        draw_heatmaps(coloured, {causal}, position_labels(2, {}), style);
        const std::string grey =
            shading == Shading::Colour256 ? "\x1b[38;5;244m" : "\x1b[38;2;128;128;128m";
        const std::string hatched = grey + "//\x1b[0m";
        CHECK_THAT(coloured.str(), Catch::Contains("\nmasked: " + hatched + legend));
        const std::string zero =
            shading == Shading::Colour256
                ? "\x1b[48;5;" + std::to_string(colour256_index(0.0f)) + "m  \x1b[0m"
                : "\x1b[48;2;" + std::to_string(palette_colour(0.0f).r) + ";";
        const std::string rows = coloured.str().substr(coloured.str().find("\n0  "));
        CHECK(count_of(rows, hatched) == 1);                // query 0, key 1
        CHECK_THAT(rows, Catch::Contains("\n1  " + zero));  // query 1, key 0: the colour of 0
    }
    std::ostringstream unmasked;
    draw_heatmaps(unmasked, small_maps(), position_labels(3, {}), HeatmapStyle{});
    CHECK_THAT(unmasked.str(), !Catch::Contains("masked") && !Catch::Contains("/"));
}

TEST_CASE("the heatmap hatches the keys of the run's own mask", "[heatmap]") {
    // the bool_mask parity case: a (5, 5) mask, True = blocked; head 0 of batch 0 drawn plain
    const std::string dir = "data/parity/bool_mask/";
    const test::RunResult r =
        test::run_mha("--weights " + dir + "weights.npz --input " + dir + "query.npy --mask " +
                      dir + "mask.npy --heads 2 --heatmap --head 0");
    REQUIRE(r.status == 0);
    const npy::Array mask = npy::read_npy(dir + "mask.npy");
    REQUIRE(mask.shape == Shape{5, 5});
    std::size_t blocked = 0;
    for (std::size_t i = 0; i < 5; ++i) {
        const std::size_t at =
            r.output.find("\n" + std::to_string(i) + "  ", r.output.find("head 0"));
        REQUIRE(at != std::string::npos);
        const std::string cells =
            (r.output.substr(at + 4, 10) + std::string(10, ' ')).substr(0, 10);
        for (std::size_t j = 0; j < 5; ++j) {
            INFO("query " << i << ", key " << j << ": '" << cells.substr(2 * j, 2) << "'");
            const bool hidden = mask.values[i * 5 + j] != 0;
            blocked += hidden ? 1 : 0;
            CHECK((cells.substr(2 * j, 2) == "//") == hidden);
        }
    }
    CHECK(blocked > 0);
    // the model's maps: its causal mask (query 0 of layer 0 sees key 0 only)
    const test::RunResult model = test::run_mha(
        "--model ../examples/models/kjv-2x4.npz --text Amen --layer 0 --heatmap --head 1");
    REQUIRE(model.status == 0);
    CHECK_THAT(model.output, Catch::Contains("masked: //") && Catch::Contains("\n0 A  @@//////\n"));
}

TEST_CASE("the SVG: a light palette, hatched masked cells, a caption, any --text", "[svg]") {
    const std::string path = test::temp_path("caption.svg");
    const test::RunResult r = test::run_mha(
        "--text \"$(printf 'a\\001b \\377 <c> d')\" --demo-heads --export-svg " + path);
    REQUIRE(r.status == 0);
    const std::string svg = test::read_text(path);
    std::remove(path.c_str());
    CHECK(test::XmlChecker(svg).well_formed());
    // 8 tokens (a, U+FFFD, b, U+FFFD, <, c, >, d), causal: the 28 cells above the diagonal
    // of each of the 4 heads are masked
    // each hatched with grey lines, and the legend's swatch too
    CHECK(count_of(svg, "<path fill=\"none\" stroke=\"#b0b0b0\"") == 4 * 28 + 1);
    CHECK(count_of(svg, "(masked)</title>") == 4 * 28);
    CHECK_THAT(svg, Catch::Contains("text: a \xef\xbf\xbd b \xef\xbf\xbd &lt; c &gt; d"));
    CHECK_THAT(svg, Catch::Contains("sizes: B=1, N=8, M=8, d_model=256, h=4, d_k=64, "
                                    "self-attention") &&
                        Catch::Contains("weights: demo heads (constructed)") &&
                        Catch::Contains("attention weight (fixed scale 0 to 1)") &&
                        Catch::Contains("masked (weight 0 by the mask)"));
    // a white background under the whole viewBox
    CHECK_THAT(svg, Catch::Contains("\">\n<rect width=\"561.0\" height=\"753.0\" fill=\"#ffffff\" "
                                    "stroke=\"none\"/>\n"));
    // the page's cells: the print palette, so a weight of 1 (query 0 on key 0) is dark ink
    const std::string first = svg.substr(svg.rfind("<rect", svg.find("><title>")));
    const std::string fill = first.substr(first.find("fill=\"") + 6, 7);
    CHECK(fill == hex(palette_colour(1.0f, Palette::Print)));

    const test::RunResult scaled =
        test::run_mha("--text 'a b c' --export-svg " + path + " --scale auto");
    REQUIRE(scaled.status == 0);
    const std::string auto_svg = test::read_text(path);
    std::remove(path.c_str());
    CHECK_THAT(auto_svg, Catch::Contains("each panel from its own min to its max (--scale auto)") &&
                             Catch::Contains("head 0 ["));
    CHECK(count_of(auto_svg, "masked") == 0);  // no mask, nothing hatched
}

TEST_CASE("TERM unset or dumb gets no colour on a terminal, as NO_COLOR", "[palette]") {
    CHECK(dumb_terminal(nullptr));
    CHECK(dumb_terminal(""));
    CHECK(dumb_terminal("dumb"));
    CHECK_FALSE(dumb_terminal("xterm-256color"));
    // script(1) gives the run a real terminal on stdout, so --color auto is what is tried
    const std::string on_terminal = "script -qec \"" + test::mha_binary() + " " + demo_args +
                                    "\" /dev/null";
    const test::RunResult xterm = test::run_command("TERM=xterm NO_COLOR= " + on_terminal);
    CHECK_THAT(xterm.output, Catch::Contains("\x1b[48;5;"));
    for (const char* term : {"TERM=dumb", "TERM=", "env -u TERM"}) {
        const test::RunResult plain = test::run_command(std::string(term) + " " + on_terminal);
        CHECK(plain.status == 0);
        CHECK_THAT(plain.output, !Catch::Contains("\x1b["));
    }
}

}  // namespace test_heatmap
