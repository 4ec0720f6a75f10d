// The decode lab in every view (issue 50 item 6): --format json, markdown and html carry the
// steps of chunked prefill, paged KV, drafts and quantised KV as the text trace lists them,
// --step counts and walks them, and the lesson page draws a paged cache's memory: the pool's
// blocks coloured by owner beside the block tables, the traced block and slot outlined.

#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "app/cli/cli.h"
#include "app/run/problem.h"
#include "app/run/variants.h"
#include "helpers.h"
#include "io/json.h"
#include "schema_checker.h"
#include "svg_rendering.h"
#include "show/kv_pool_picture.h"
#include "show/stepper.h"
#include "xml_checker.h"

namespace test_serving_views {

using namespace mha;

namespace {

// Each mechanism alone and together: chunks, paging (decode and chunks, shuffled), a chain
// and a tree draft, a quantised cache with a residual.
const std::vector<std::string> lab_runs = {
    " -b 1 -n 6 -d 8 -H 2 --prefill-chunks 4,2",
    " -b 2 -d 8 -H 2 -G 1 --decode 6 --kv-block-size 4 --kv-pool-seed 2",
    " -b 2 -n 7 -d 8 -H 2 --prefill-chunks 3,4 --kv-block-size 2 --kv-pool-seed 1",
    " -b 1 -d 8 -H 2 --decode 7 --draft 3",
    " -b 1 -d 8 -H 2 --decode 7 --draft-tree -1,-1,0,0,1",
    " -b 1 -d 4 -H 1 --decode 2 --kv-quant int4 --kv-quant-axis token",
    " -b 2 -d 8 -H 2 -G 1 --decode 5 --kv-quant int8 --kv-residual 2"};

struct Listed {
    std::string number, name, expression;
    bool operator==(const Listed& o) const {
        return number == o.number && name == o.name && expression == o.expression;
    }
};

std::ostream& operator<<(std::ostream& out, const Listed& s) {
    return out << s.number << " " << s.name << " " << s.expression;
}

// The text trace's step lines: number, name, expression.
std::vector<Listed> trace_list(const std::string& options) {
    const test::RunResult r = test::run_mha("--trace -t 1" + options);
    REQUIRE(r.status == 0);
    static const std::regex line("^ ?([0-9]+)  ([a-z_-]+) +(.*)$");
    std::vector<Listed> steps;
    std::istringstream lines(r.output);
    for (std::string text; std::getline(lines, text);) {
        std::smatch m;
        if (std::regex_match(text, m, line)) steps.push_back({m[1], m[2], m[3]});
    }
    return steps;
}

std::vector<std::string> words_of(const std::string& options) {
    std::istringstream in(options);
    std::vector<std::string> words;
    for (std::string word; in >> word;) words.push_back(word);
    return words;
}

std::size_t count_of(const std::string& text, const std::string& part) {
    std::size_t n = 0;
    for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1))
        ++n;
    return n;
}

std::vector<std::string> all_of(const std::string& text, const std::regex& pattern,
                                std::size_t group = 0) {
    std::vector<std::string> found;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), pattern);
         it != std::sregex_iterator(); ++it)
        found.push_back((*it)[group]);
    return found;
}

// Keys from a script, one key a character; End when they run out.
class Keys : public KeySource {
public:
    explicit Keys(std::string keys) : keys_(std::move(keys)) {}
    Key next_key() override {
        return at_ == keys_.size() ? Key::End : key_of(std::string(1, keys_[at_++]));
    }

private:
    std::string keys_;
    std::size_t at_ = 0;
};

std::string lesson_page(const std::string& options) {
    const std::string path = test::temp_path("serving.html");
    const test::RunResult r = test::run_mha("--format html --output " + path + " -t 1" + options);
    INFO(r.output);
    REQUIRE(r.status == 0);
    const std::string page = test::read_text(path);
    std::remove(path.c_str());
    return page;
}

// Every pool picture of a page, each a whole <svg> element.
std::vector<std::string> pool_pictures(const std::string& page) {
    std::vector<std::string> svgs;
    for (std::size_t at = page.find("<figure class=\"pool\">"); at != std::string::npos;
         at = page.find("<figure class=\"pool\">", at + 1)) {
        const std::size_t begin = page.find("<svg", at), end = page.find("</svg>", at);
        svgs.push_back(page.substr(begin, end + 6 - begin));
    }
    return svgs;
}

}  // namespace

TEST_CASE("--format json: the decode lab's steps, valid by docs/trace.schema.json, as the "
          "trace lists them",
          "[serving-views][json]") {
    const json::Value schema =
        json::parse(test::read_text("../docs/trace.schema.json"), "trace.schema.json");
    const test::SchemaChecker checker(schema);
    for (const std::string& options : lab_runs) {
        CAPTURE(options);
        const test::RunResult r = test::run_mha("--format json -t 1" + options, false);
        REQUIRE(r.status == 0);
        const json::Value document = json::parse(r.output, "the JSON trace");
        CHECK(checker.broken(document) == std::vector<std::string>{});
        std::vector<Listed> steps;
        for (const json::Value& step : document.find("steps")->items) {
            steps.push_back({step.find("step")->text, step.find("name")->text,
                             step.find("expression")->text});
            if (const json::Value* paged = step.find("paged")) {
                // sequence 0's table and the position, as the step's notes word them
                std::string table, notes;
                for (const json::Value& entry : paged->find("tables")->items.front().items)
                    table += (table.empty() ? "" : ", ") + entry.text;
                for (const json::Value& note : step.find("notes")->items) notes += note.text;
                CHECK_THAT(notes, Catch::Contains("block_table[0] = [" + table + "]"));
                const json::Value& at = *paged->find("position");
                CHECK_THAT(notes, Catch::Contains("position t = " + at.find("t")->text));
                CHECK_THAT(notes, Catch::Contains("= " + at.find("block")->text + ", slot t % S"));
                const std::string B = document.find("config")->find("B")->text;
                CHECK(paged->find("tables")->items.size() == std::stoul(B));
            }
        }
        CHECK(steps == trace_list(options));
    }
}

TEST_CASE("the schema checker finds a broken rule", "[serving-views][json]") {
    const json::Value schema =
        json::parse(test::read_text("../docs/trace.schema.json"), "trace.schema.json");
    const test::RunResult r = test::run_mha("--format json -b 1 -n 2 -d 4 -H 1", false);
    const std::string broken = std::regex_replace(r.output, std::regex("\\{\"step\":0,"),
                                                  "{\"step\":24,", std::regex_constants::format_first_only);
    CHECK(test::SchemaChecker(schema).broken(json::parse(broken, "broken")) ==
          std::vector<std::string>{"$.steps[0].step: above the maximum 23"});
}

TEST_CASE("--format markdown: a row per step of the decode lab, its notes, each mask grid",
          "[serving-views][markdown]") {
    for (const std::string& options : lab_runs) {
        CAPTURE(options);
        const test::RunResult r = test::run_mha("--format markdown -t 1" + options);
        REQUIRE(r.status == 0);
        const std::vector<std::string> rows =
            all_of(r.output, std::regex("\\n\\| ([0-9]+ \\| [a-z_-]+) \\| `"), 1);
        std::vector<std::string> listed;
        for (const Listed& s : trace_list(options)) listed.push_back(s.number + " | " + s.name);
        CHECK(rows == listed);
        // every note of the JSON document, under its step's number
        const json::Value document =
            json::parse(test::run_mha("--format json -t 1" + options, false).output, "json");
        for (const json::Value& step : document.find("steps")->items) {
            for (const json::Value& note : step.find("notes")->items)
                CHECK_THAT(r.output, Catch::Contains("- step " + step.find("step")->text + ": " +
                                                     note.text + "\n"));
        }
        // each step 8 drawn in the trace is drawn in the hand-out
        const test::RunResult trace = test::run_mha("--trace -t 1" + options);
        CHECK(count_of(r.output, "mask for batch 0, head 0") ==
              count_of(trace.output, "mask for batch 0, head 0"));
    }
}

TEST_CASE("--markdown: chunked prefill's mask grids, one per chunk, named by their row",
          "[serving-views][markdown]") {
    const test::RunResult r =
        test::run_mha("--format markdown -b 1 -n 6 -d 8 -H 2 --prefill-chunks 4,2");
    REQUIRE(r.status == 0);
    CHECK_THAT(r.output, Catch::Contains("Step 8 (row 5 of the table):\n\n```\nmask for batch 0, "
                                         "head 0 (. attends, x blocked):\n         key 0 1 2 3\n"));
    CHECK_THAT(r.output, Catch::Contains("Step 8 (row 15 of the table):\n\n```\nmask for batch 0, "
                                         "head 0 (. attends, x blocked):\n         key 0 1 2 3 4 "
                                         "5\n  query 0    . . . . . x\n  query 1    . . . . . .\n"));
}

TEST_CASE("--step counts the decode lab's steps as the run shows them, and walks them",
          "[serving-views][step]") {
    for (const std::string& options : lab_runs) {
        CAPTURE(options);
        const Config config = parse_args(words_of("--step -t 1" + options));
        const Problem problem = build_problem(config);
        const std::size_t total = dry_tally(config, problem).steps;
        REQUIRE(total == trace_list(options).size());
        // Enter through every step, then b back to the first and Enter to the second
        const std::string keys = std::string(total, '\n');
        std::ostringstream out, prompts;
        Stepper stepper(out, std::make_unique<Keys>(keys), prompts, total);
        stepper.begin(problem.info);
        run_pass(config, problem, stepper);
        const std::string of = " of " + std::to_string(total) + ") ";
        CHECK(count_of(prompts.str(), of) == total);
        CHECK_THAT(prompts.str(), Catch::Contains("(" + std::to_string(total) + of));
        // without a keyboard, --step is the trace
        const auto without_time = [](const std::string& s) { return s.substr(0, s.find("wall")); };
        CHECK(without_time(test::run_mha("--step -t 1" + options + " </dev/null").output) ==
              without_time(test::run_mha("--trace -t 1" + options).output));
    }
}

TEST_CASE("--format html: a card per step of the decode lab, each mask grid in its card",
          "[serving-views][html]") {
    for (const std::string& options : lab_runs) {
        CAPTURE(options);
        const std::string page = lesson_page(options);
        CHECK(test::XmlChecker(page).well_formed());
        CHECK(count_of(page, "<section class=\"step\"") + count_of(page, "<div class=\"also\">") ==
              trace_list(options).size());
        const test::RunResult trace = test::run_mha("--trace -t 1" + options);
        CHECK(count_of(page, "<pre class=\"grid\">") ==
              count_of(trace.output, "mask for batch 0, head 0"));
        CHECK(count_of(page, "<figure class=\"pool\">") ==
              count_of(trace.output, "K_pool[block_table"));
    }
}

TEST_CASE("the lesson page's memory picture: blocks by owner, the block tables, the traced slot",
          "[serving-views][html]") {
    // B = 2 sequences of T = 6 in blocks of S = 4: 4 blocks; seed 2 gives sequence 0 the table
    // [3, 0] (docs/decode.md) and sequence 1 the rest, [2, 1].
    const std::vector<std::string> svgs =
        pool_pictures(lesson_page(" -b 2 -d 8 -H 2 -G 1 --decode 6 --kv-block-size 4 "
                                  "--kv-pool-seed 2"));
    REQUIRE(svgs.size() == 6);  // one per token's step 2
    for (const std::string& svg : svgs) {
        CHECK(test::XmlChecker(svg).well_formed());
        CHECK_THAT(svg, Catch::StartsWith("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        CHECK_THAT(svg, !Catch::Contains("class=") && !Catch::Contains("style="));
        // 4 blocks of 4 slots, and the traced block's frame and slot
        CHECK(count_of(svg, "height=\"18\"") == 4 * 4 + 1);
    }
    // token 1 (t = 0): each sequence owns one block, written in one slot; two blocks free
    const std::string& first = svgs.front();
    CHECK(count_of(first, "· free</text>") == 2);
    CHECK_THAT(first, Catch::Contains(">block 3 · seq 0</text>"));
    CHECK_THAT(first, Catch::Contains(">block 2 · seq 1</text>"));
    CHECK_THAT(first, Catch::Contains("outlined: position t = 0 of sequence 0, block_table[0][0 "
                                      "// 4] = block 3, slot 0 % 4 = 0"));
    // sequence 0's colour (#e69f00) fills one slot, sequence 1's (#56b4e9) another
    CHECK(count_of(first, "fill=\"#e69f00\" stroke=\"#e69f00\"") == 1);
    CHECK(count_of(first, "fill=\"#56b4e9\" stroke=\"#56b4e9\"") == 1);
    // token 6 (t = 5): every block owned; the tables [3, 0] and [2, 1]; t = 5 in block 0, slot 1
    const std::string& last = svgs.back();
    CHECK(count_of(last, "· free</text>") == 0);
    const std::vector<std::string> entries =
        all_of(last, std::regex("height=\"22\" fill=\"#([0-9a-f]{6})\"[^>]*/><text x=\"[0-9]+\" "
                                "y=\"[0-9]+\" text-anchor=\"middle\">([0-9]+)</text>"),
               2);
    CHECK(entries == std::vector<std::string>{"3", "0", "2", "1"});
    CHECK_THAT(last, Catch::Contains("outlined: position t = 5 of sequence 0, block_table[0][5 "
                                     "// 4] = block 0, slot 5 % 4 = 1"));
    // written slots: 6 of each sequence; 2 of each allocated but unwritten (fragmentation)
    CHECK(count_of(last, "fill=\"#e69f00\" stroke=\"#e69f00\"") == 6);
    CHECK(count_of(last, "fill=\"#ffffff\" stroke=\"#e69f00\"") == 2);
    CHECK(count_of(last, "fill=\"#56b4e9\" stroke=\"#56b4e9\"") == 6);
    CHECK(count_of(last, "fill=\"#ffffff\" stroke=\"#56b4e9\"") == 2);
    // the traced entry of sequence 0's table in a thick black frame
    CHECK(count_of(last, "stroke=\"#000000\" stroke-width=\"3\"") == 2);  // entry and slot
}

TEST_CASE("the memory picture: a pool too large to draw is said in words", "[serving-views][html]") {
    const std::string page = lesson_page(" -b 2 -d 8 -H 2 --decode 3 --kv-block-size 200");
    CHECK(count_of(page, "<figure class=\"pool\">") == 0);
    CHECK_THAT(page, Catch::Contains("The pool holds 400 slots, more than the 256 a memory picture "
                                     "draws."));
    // nor does the page's size check count pictures it will not draw: 901 steps and two
    // heatmaps of 300 x 300 fit the 256 MiB a page may take (a picture a step would not)
    const std::string many = lesson_page(" -b 1 -d 8 -H 2 --decode 300 --kv-block-size 1");
    CHECK(count_of(many, "<figure class=\"pool\">") == 0);
}

TEST_CASE("the memory picture renders in librsvg and ImageMagick: every slot its colour",
          "[serving-views][svg-render]") {
    if (test::run_command("command -v rsvg-convert >/dev/null && command -v convert-im6.q16 "
                          ">/dev/null")
            .status != 0) {
        WARN("skipped: rsvg-convert (librsvg2-bin) or convert-im6.q16 (imagemagick) is missing; "
             "make check installs them");
        return;
    }
    const std::vector<std::string> svgs = pool_pictures(
        lesson_page(" -b 3 -d 8 -H 2 --decode 5 --kv-block-size 2 --kv-pool-seed 4"));
    REQUIRE(!svgs.empty());
    const std::string svg = svgs[2];  // token 3: some blocks owned, some free
    const std::string svg_path = test::temp_path("pool.svg"), png = test::temp_path("pool.png"),
                      ppm = test::temp_path("pool.ppm");
    std::ofstream(svg_path) << svg;
    // the slots: 18 px strips, filled in a sequence's colour or white
    static const std::regex slot("<rect x=\"([0-9]+)\" y=\"([0-9]+)\" width=\"([0-9]+)\" "
                                 "height=\"18\" fill=\"#([0-9a-f]{6})\"");
    for (const auto& [renderer, command] : test::svg_renderers(svg_path, png, ppm)) {
        CAPTURE(renderer);
        const test::RunResult run = test::run_command(command + " 2>&1");
        CHECK(run.output.empty());
        REQUIRE(run.status == 0);
        const test::Image image = test::read_ppm(ppm);
        std::size_t slots = 0, wrong = 0;
        for (auto it = std::sregex_iterator(svg.begin(), svg.end(), slot);
             it != std::sregex_iterator(); ++it, ++slots) {
            const std::size_t x = std::stoul((*it)[1]) + std::stoul((*it)[3]) / 2,
                              y = std::stoul((*it)[2]) + 9;
            const std::string fill = (*it)[4];
            for (std::size_t c = 0; c < 3; ++c) {
                const int expected = std::stoi(fill.substr(2 * c, 2), nullptr, 16);
                wrong += std::abs(image.at(x, y, c) - expected) > 24;
            }
        }
        CHECK(slots == 3 * 3 * 2);  // 3 sequences of ceil(5 / 2) = 3 blocks of 2 slots
        CHECK(wrong == 0);
    }
    for (const std::string& path : {svg_path, png, ppm}) std::remove(path.c_str());
}

TEST_CASE("the memory picture stays within the bytes the lesson page's size check counts",
          "[serving-views][html]") {
    // the largest pools drawn: 256 blocks of one slot, as 256 sequences of one block or one
    // sequence of 256 (the most table entries and column numbers)
    const auto [sequences, held] =
        GENERATE(table<std::size_t, std::size_t>({{256, 1}, {1, 256}, {16, 16}}));
    CAPTURE(sequences, held);
    PagedFacts paged;
    paged.block_size = 1;
    paged.pool_blocks = sequences * held;
    paged.sequences = sequences;
    paged.held = held;
    paged.tables.resize(sequences);
    for (std::size_t b = 0; b < sequences; ++b)
        for (std::size_t j = 0; j < held; ++j) paged.tables[b].push_back(b * held + j);
    paged.positions = {{held - 1, held - 1, held - 1, 0}};
    REQUIRE(pool_pictured(paged));
    std::ostringstream svg;
    write_kv_pool_svg(svg, paged);
    CHECK(test::XmlChecker(svg.str()).well_formed());
    CHECK(svg.str().size() <= max_pool_picture_bytes);
}

}  // namespace test_serving_views
