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

#include "app/terminal.h"
#include "helpers.h"
#include "show/head_summary.h"
#include "show/heatmap.h"
#include "show/svg.h"
#include "show/text_layout.h"
#include "show/weight_maps.h"

using namespace mha;

namespace {

// A 3 x 3 head, written out by hand, and its mirror image.
std::vector<WeightMap> small_maps() {
    WeightMap a{"head 0", 3, 3, {1.0f, 0.0f, 0.0f, 0.5f, 0.5f, 0.0f, 0.05f, 0.35f, 0.6f}};
    WeightMap b{"head 1", 3, 3, {0.0f, 0.0f, 1.0f, 0.0f, 0.75f, 0.25f, 0.95f, 0.04f, 0.01f}};
    return {a, b};
}

// A checker for the XML this project writes: one root element, every tag closed
// in order, attribute values quoted, only the five named entities and numeric ones.
class XmlChecker {
public:
    explicit XmlChecker(const std::string& text) : text_(text) {}

    bool well_formed() {
        std::vector<std::string> open;
        std::size_t roots = 0;
        skip_declaration();
        while (at_ < text_.size()) {
            if (text_[at_] != '<') {
                if (!character_data()) return false;
                continue;
            }
            const std::size_t end = text_.find('>', at_);
            if (end == std::string::npos) return false;
            const std::string tag = text_.substr(at_ + 1, end - at_ - 1);
            at_ = end + 1;
            if (!tag.empty() && tag[0] == '/') {
                if (open.empty() || open.back() != tag.substr(1)) return false;
                open.pop_back();
                continue;
            }
            const std::string name = tag.substr(0, tag.find_first_of(" \n/"));
            if (name.empty() || !attributes_quoted(tag)) return false;
            if (open.empty()) ++roots;
            if (tag.back() != '/') open.push_back(name);
        }
        return open.empty() && roots == 1;
    }

private:
    void skip_declaration() {
        if (text_.compare(0, 5, "<?xml") == 0) at_ = text_.find("?>") + 2;
    }

    bool character_data() {
        const char c = text_[at_];
        if (c == '>') return false;
        if (c == '&') {
            const std::size_t end = text_.find(';', at_);
            if (end == std::string::npos) return false;
            const std::string entity = text_.substr(at_ + 1, end - at_ - 1);
            static const std::vector<std::string> named = {"amp", "lt", "gt", "quot", "apos"};
            if (std::find(named.begin(), named.end(), entity) == named.end() && entity[0] != '#')
                return false;
            at_ = end + 1;
            return true;
        }
        ++at_;
        return true;
    }

    static bool attributes_quoted(const std::string& tag) {
        for (std::size_t i = tag.find('='); i != std::string::npos; i = tag.find('=', i + 1)) {
            if (i + 1 >= tag.size() || tag[i + 1] != '"') return false;
            const std::size_t close = tag.find('"', i + 2);
            if (close == std::string::npos) return false;
            const std::string value = tag.substr(i + 2, close - i - 2);
            if (value.find_first_of("<&") != std::string::npos &&
                value.find("&amp;") == std::string::npos)
                return false;
            i = close;
        }
        return true;
    }

    const std::string& text_;
    std::size_t at_ = 0;
};

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
    const test::RunResult r = test::run_command("COLUMNS=80 " + test::mha_binary() + " " + demo_args + " 2>&1");
    REQUIRE(r.status == 0);
    const std::size_t begin = r.output.find("attention weights");
    const std::size_t end = r.output.find("\nscores,");
    REQUIRE(begin != std::string::npos);
    REQUIRE(end != std::string::npos);
    CHECK(r.output.substr(begin, end - begin) == test::read_text("data/golden/demo_heads_80.txt"));
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
    CHECK(XmlChecker(svg).well_formed());
    CHECK(count_of(svg, "<rect class=\"cell\"") == 3 * 11 * 11);  // 3 maps of 11 x 11 tokens
    CHECK(count_of(svg, "<g class=\"panel\">") == 3);
    CHECK_THAT(svg, Catch::Contains("2 &lt;") && Catch::Contains("4 &amp;") &&
                        Catch::Contains("head 2: same token") &&
                        Catch::Contains("mean of 4 heads"));
    CHECK_FALSE(XmlChecker("<svg><g></svg></g>").well_formed());
    CHECK_FALSE(XmlChecker("<svg><text>a < b</text></svg>").well_formed());
    CHECK_FALSE(XmlChecker("<svg x=1></svg>").well_formed());
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
                              "(0\\.9|1\\.0)[0-9] after(.|\n)*"));
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
        {"--head 1", "--head picks what --heatmap and --export-svg draw"},
        {"--ablate-head 9", "--ablate-head 9 is not a head"},
        {"--heatmap --format json", "use them with --format text"},
        {"--heatmap --color sometimes", "--color expects one of always, auto, never"},
        {"--export-svg /nonexistent-dir/heads.svg", "/nonexistent-dir/heads.svg"},
    }));
    test::check_rejected(args, message);
}
