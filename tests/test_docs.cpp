// The documentation cannot rot: every console excerpt in the README, docs/ and examples/
// runs. A ```console block's "$ " lines run in order (each exits 0, or 2 when the page shows
// an "mha: error:" line under it, or 1 when it shows a failed score; the lines shown under
// it must appear in order, "..." skips), and a ```sh block's lines run as commands that exit
// 0. A block that cannot run here (it needs a terminal, the network, PyTorch or minutes) has
// "<!-- not run: REASON -->" on the nearest line above it; any other block that holds a
// command fails the test. The JSON schema page lists exactly the fields the tool writes, and
// the man page and the bash completion name every option --help names.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "helpers.h"

namespace test_docs {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.pop_back();
        lines.push_back(line);
    }
    return lines;
}

std::string without_indent(const std::string& line) {
    return line.substr(std::min(line.find_first_not_of(' '), line.size()));
}

// A code block of a page: its fence's info string ("console", "sh", "python"; "" for an
// indented block or a bare fence), the line it starts on, its lines without their indent,
// and the REASON of a "<!-- not run: REASON -->" that is the nearest non-blank line above.
struct CodeBlock {
    std::string info;
    std::size_t line = 0;
    std::vector<std::string> lines;
    bool marked = false;
    std::string not_run;
};

std::vector<CodeBlock> code_blocks(const std::string& markdown) {
    const std::vector<std::string> lines = lines_of(markdown);
    const std::regex marker("<!-- not run: (.*) -->");
    std::vector<CodeBlock> blocks;
    std::string above;  // the nearest non-blank line above, outside any block
    const auto start = [&](std::string info, std::size_t line) {
        CodeBlock block{std::move(info), line + 1, {}, false, {}};
        std::smatch reason;
        if (std::regex_match(above, reason, marker)) block = {block.info, block.line, {}, true, reason[1]};
        blocks.push_back(block);
    };
    for (std::size_t i = 0; i < lines.size(); ++i) {
        const std::string bare = without_indent(lines[i]);
        if (bare.rfind("```", 0) == 0) {
            // a fence in a list item is indented, and so are its lines
            const std::size_t indent = lines[i].size() - bare.size();
            start(bare.substr(3), i);
            for (++i; i < lines.size() && without_indent(lines[i]).rfind("```", 0) != 0; ++i)
                blocks.back().lines.push_back(lines[i].substr(std::min(indent, lines[i].size())));
            above = "```";
        } else if (lines[i].rfind("    ", 0) == 0 && i > 0 && lines[i - 1].empty()) {
            start("", i);
            for (; i < lines.size() && (lines[i].empty() || lines[i].rfind("    ", 0) == 0); ++i)
                blocks.back().lines.push_back(lines[i].substr(std::min<std::size_t>(4, lines[i].size())));
            while (blocks.back().lines.back().empty()) blocks.back().lines.pop_back();
            above = blocks.back().lines.back();
            --i;
        } else if (!bare.empty()) {
            above = bare;
        }
    }
    return blocks;
}

// A line that runs a command, after an optional "$ " prompt: mha, make, Python, a shell tool.
bool is_command(const std::string& line) {
    static const std::regex command(
        "(\\$ )?(mha|build/mha|make|python3|/usr/bin/\\S+|sh|cmp|apt-get|huggingface-cli|"
        "rsvg-convert|convert|chromium|tmux|[A-Z_]+=\\S*)( .*)?");
    return std::regex_match(line, command);
}

// One "$ command" line of a ```console block and the output lines shown under it.
struct ConsoleExample {
    std::string command;
    std::vector<std::string> shown;
};

std::vector<ConsoleExample> console_examples(const CodeBlock& block) {
    std::vector<ConsoleExample> examples;
    for (const std::string& line : block.lines) {
        if (line.rfind("$ ", 0) == 0) {
            examples.push_back({line.substr(2), {}});
        } else if (!examples.empty() && line != "...") {
            examples.back().shown.push_back(line);
        }
    }
    return examples;
}

// The commands a page's ```console blocks run.
std::vector<ConsoleExample> console_examples(const std::string& markdown) {
    std::vector<ConsoleExample> examples;
    for (const CodeBlock& block : code_blocks(markdown)) {
        if (block.info != "console" || block.marked) continue;
        for (const ConsoleExample& example : console_examples(block)) examples.push_back(example);
    }
    return examples;
}

// The lines of a ```sh block that run: each one not blank and not a comment.
std::vector<ConsoleExample> sh_commands(const CodeBlock& block) {
    std::vector<ConsoleExample> commands;
    for (const std::string& line : block.lines) {
        if (!line.empty() && line[0] != '#') commands.push_back({line, {}});
    }
    return commands;
}

// The pages whose console examples the suite runs: the README, docs/*.md and every README.md
// under examples/.
std::vector<fs::path> example_pages() {
    std::vector<fs::path> pages{"../README.md"};
    for (const auto& entry : fs::directory_iterator("../docs")) {
        if (entry.path().extension() == ".md") pages.push_back(entry.path());
    }
    for (const auto& entry : fs::recursive_directory_iterator("../examples")) {
        if (entry.path().filename() == "README.md") pages.push_back(entry.path());
    }
    std::sort(pages.begin(), pages.end());
    return pages;
}

// Each shown line must appear in the actual output, in the shown order.
bool shows_in_order(const std::vector<std::string>& shown, const std::string& output) {
    const std::vector<std::string> actual = lines_of(output);
    std::size_t at = 0;
    for (const std::string& line : shown) {
        while (at < actual.size() && actual[at] != line) ++at;
        if (at == actual.size()) return false;
        ++at;
    }
    return true;
}

// The exit status a page promises: 2 when it shows an error line, 1 when it shows a
// failed quiz or check score, 0 otherwise.
int shown_status(const std::vector<std::string>& shown) {
    for (const std::string& line : shown) {
        if (line.rfind("mha: error: ", 0) == 0) return 2;
        if (line.rfind("score: ", 0) == 0 && line.find(", fail ") != std::string::npos) return 1;
    }
    return 0;
}

std::set<std::string> matches(const std::string& text, const std::regex& pattern) {
    std::set<std::string> found;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), pattern);
         it != std::sregex_iterator(); ++it) {
        found.insert((*it)[1].str());
    }
    return found;
}

// Every long option a --help text names: "--trace", "--format", ...
std::set<std::string> options_in(const std::string& help) {
    return matches(help, std::regex("(--[a-z][a-z-]*)"));
}

// Runs a documented command as a reader would: in `scratch`, a folder that sees the
// repository's examples/, docs/ and tests/, with the binary under test first on PATH and
// as build/mha (the README's name for it).
test::RunResult run_in_scratch(const std::string& scratch, const std::string& command) {
    const std::string root = fs::canonical("..").string();
    return test::run_command("mkdir -p " + scratch + " && cd " + scratch +
                             " && for d in examples docs tests; do [ -e $d ] || ln -s " + root +
                             "/$d $d; done && { [ -e build ] || ln -s " + test::mha_dir() +
                             " build; } && PATH=" + test::mha_dir() + ":$PATH; (" + command +
                             "\n) </dev/null 2>&1");  // a line of its own: a command may end in a # comment
}

// Characters (UTF-8 code points) in a line: its width on a terminal for this output.
std::size_t code_points(const std::string& line) {
    return std::size_t(std::count_if(line.begin(), line.end(),
                                     [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

}  // namespace

TEST_CASE("the excerpt reader finds fenced, indented and listed blocks, and their marks",
          "[docs]") {
    const std::vector<CodeBlock> blocks = code_blocks(
        "Text.\n\n    build/mha --trace\n\n    more of it\n\nText.\n"
        "<!-- not run: needs a terminal -->\n```console\n$ mha --step\n  indented output\n```\n"
        "- an item:\n\n  ```sh\n  mha -n 2   # a comment\n  ```\n\n"
        "<!-- not run: measured -->\n\n    engine  ms\n");
    REQUIRE(blocks.size() == 4);
    CHECK(blocks[0].info.empty());
    CHECK(blocks[0].lines == std::vector<std::string>{"build/mha --trace", "", "more of it"});
    CHECK(!blocks[0].marked);
    CHECK(blocks[1].info == "console");
    CHECK(blocks[1].marked);
    CHECK(blocks[1].not_run == "needs a terminal");
    CHECK(blocks[1].lines == std::vector<std::string>{"$ mha --step", "  indented output"});
    CHECK(blocks[2].info == "sh");
    CHECK(!blocks[2].marked);
    CHECK(sh_commands(blocks[2]).size() == 1);
    CHECK(blocks[3].marked);
    // what counts as a command in a block that is not run
    CHECK(is_command(blocks[0].lines[0]));
    CHECK(is_command("$ make bench"));
    CHECK(is_command("python3 export.py"));
    CHECK(!is_command("Q = x W_q + b_q"));
    CHECK(!is_command("src/core/reference.cpp"));
}

TEST_CASE("every console excerpt in the README, docs/ and examples/ runs or says why not",
          "[docs]") {
    const std::vector<fs::path> pages = example_pages();
    REQUIRE(pages.size() >= 8);
    std::size_t commands = 0, blocks_run = 0, blocks_marked = 0;
    for (const fs::path& page : pages) {
        // Each page runs in its own scratch folder that sees the repository's
        // examples/, docs/ and tests/, so files the commands write land there. An exercise's
        // page runs in a copy of its own folder, as a student who got only that folder would.
        const std::string scratch = test::temp_path("page-" + page.stem().string() + "-" +
                                                    page.parent_path().filename().string());
        if (page.string().find("/exercises") != std::string::npos) {
            REQUIRE(test::run_command("rm -rf " + scratch + " && cp -r " +
                                      page.parent_path().string() + " " + scratch)
                        .status == 0);
        }
        for (const CodeBlock& block : code_blocks(test::read_text(page))) {
            CAPTURE(page.string(), block.line, block.info);
            if (block.marked) {
                CHECK(!block.not_run.empty());  // the reason is the point of the mark
                ++blocks_marked;
                continue;
            }
            const bool console = block.info == "console";
            if (!console && block.info != "sh") {
                // formulas, diagrams, Python: a command among them would be skipped
                for (const std::string& line : block.lines) {
                    CAPTURE(line);
                    CHECK(!is_command(line));
                }
                continue;
            }
            const std::vector<ConsoleExample> examples =
                console ? console_examples(block) : sh_commands(block);
            CHECK(!examples.empty());
            CHECK((!console || block.lines.front().rfind("$ ", 0) == 0));
            for (const ConsoleExample& example : examples) {
                CAPTURE(example.command);
                const test::RunResult r = run_in_scratch(scratch, example.command);
                INFO(r.output);
                CHECK(r.status == shown_status(example.shown));
                CHECK(shows_in_order(example.shown, r.output));
                ++commands;
            }
            ++blocks_run;
        }
        test::run_command("rm -rf " + scratch);
    }
    std::cout << "[docs] console excerpts: " << blocks_run << " blocks run (" << commands
              << " commands), " << blocks_marked << " marked not run\n";
    CHECK(commands >= 20);
}

TEST_CASE("docs/json-schema.md lists exactly the fields the JSON trace has", "[docs][json]") {
    const std::string page = test::read_text("../docs/json-schema.md");
    const std::set<std::string> documented = matches(page, std::regex("\\n\\| `([A-Za-z_]+)` \\|"));
    // Causal with N, M <= 16 gives step 8 its allowed grid; --values gives every step its values.
    const test::RunResult r =
        test::run_mha("--format json -b 1 -n 3 -d 8 -H 2 --causal --values", false);
    REQUIRE(r.status == 0);
    std::set<std::string> written = matches(r.output, std::regex("\"([A-Za-z_]+)\":"));
    const test::RunResult shapes =
        test::run_mha("--format json --shapes-only --backward -b 1 -n 3 -d 8 -H 2", false);
    REQUIRE(shapes.status == 0);
    written.merge(matches(shapes.output, std::regex("\"([A-Za-z_]+)\":")));
    // a paged cache's step 2 adds its paged object
    const test::RunResult paged =
        test::run_mha("--format json -b 2 -d 8 -H 2 --decode 3 --kv-block-size 2", false);
    REQUIRE(paged.status == 0);
    written.merge(matches(paged.output, std::regex("\"([A-Za-z_]+)\":")));
    const test::RunResult ledger =
        test::run_mha("--format json --preset gpt2 --shapes-only --decode 2 --kv-block-size 2", false);
    REQUIRE(ledger.status == 0);
    written.merge(matches(ledger.output, std::regex("\"([A-Za-z_]+)\":")));
    CHECK(written == documented);
    CHECK_THAT(r.output, Catch::StartsWith("{\"tool\":\"mha\",\"schema_version\":1,"));
    CHECK_THAT(page, Catch::Contains("# The JSON trace, schema version 1"));
}

TEST_CASE("docs/trace.schema.json defines exactly the fields docs/json-schema.md lists",
          "[docs][json]") {
    const std::string page = test::read_text("../docs/json-schema.md");
    const std::set<std::string> documented = matches(page, std::regex("\\n\\| `([A-Za-z_]+)` \\|"));
    std::set<std::string> defined =
        matches(test::read_text("../docs/trace.schema.json"), std::regex("\"([A-Za-z_]+)\": \\{"));
    for (const char* keyword : {"properties", "items", "size", "count", "real"})
        defined.erase(keyword);
    CHECK(defined == documented);
}

TEST_CASE("the man page and the bash completion name every option of --help", "[docs]") {
    const std::set<std::string> options = options_in(test::run_mha("--help").output);
    const std::set<std::string> quiz_options = options_in(test::run_mha("quiz --help").output);
    const std::set<std::string> train_options = options_in(test::run_mha("train --help").output);
    REQUIRE(options.size() >= 25);
    REQUIRE(quiz_options.size() >= 5);
    REQUIRE(train_options.size() >= 18);
    const std::string man = test::read_text("../docs/mha.1");
    // groff, where installed, finds no mistakes in the page
    CHECK(test::run_command("! command -v groff >/dev/null || groff -man -ww -z ../docs/mha.1 2>&1")
              .output.empty());
    const std::string completion = test::read_text("../docs/mha.bash");
    for (const std::set<std::string>* list : {&options, &quiz_options, &train_options}) {
        for (const std::string& option : *list) {
            CAPTURE(option);
            // roff writes a minus in an option as \-
            CHECK_THAT(man, Catch::Contains(std::regex_replace(option, std::regex("-"), "\\-")));
            CHECK_THAT(completion, Catch::Contains(option));
        }
    }
}

TEST_CASE("make install puts the binary, the man page and the completion under PREFIX",
          "[docs][install]") {
    const std::string dest = test::temp_path("install");
    const test::RunResult r =
        test::run_command("cd .. && make -s install DESTDIR=" + dest + " PREFIX=/opt/mha 2>&1");
    INFO(r.output);
    REQUIRE(r.status == 0);
    const std::string prefix = dest + "/opt/mha";
    CHECK(test::run_command(prefix + "/bin/mha --version").output == "mha 0.1.0\n");
    CHECK(test::read_text(prefix + "/share/man/man1/mha.1") == test::read_text("../docs/mha.1"));
    CHECK(test::read_text(prefix + "/share/bash-completion/completions/mha") ==
          test::read_text("../docs/mha.bash"));
    test::run_command("rm -rf " + dest);
}

TEST_CASE("every exercise folder, copied alone, passes its solution and fails a wrong answer",
          "[docs][exercises]") {
    std::vector<std::string> exercises;
    for (const auto& entry : fs::directory_iterator("../examples/exercises")) {
        if (entry.is_directory()) exercises.push_back(entry.path().filename().string());
    }
    std::sort(exercises.begin(), exercises.end());
    REQUIRE(exercises.size() == 9);
    const std::string wrong = test::temp_path("wrong-answers.txt");
    std::ofstream(wrong) << "# every answer below is wrong\n7\n7\n7\n7\n7\n7\n";
    const std::string mha = fs::canonical(test::mha_binary()).string();
    for (const std::string& exercise : exercises) {
        CAPTURE(exercise);
        // The folder alone, somewhere else: nothing of the repository around it.
        const std::string copy = test::temp_path("alone-" + exercise);
        test::run_command("rm -rf " + copy + " && mkdir -p " + copy +
                          " && cp -r ../examples/exercises/" + exercise + "/. " + copy);
        const std::string in_copy = "cd " + copy + " && ";
        const std::string check = in_copy + "MHA=" + mha + " sh check.sh ";
        const test::RunResult right = test::run_command(check + "solution.txt 2>&1");
        INFO(right.output);
        CHECK(right.status == 0);
        CHECK_THAT(right.output, Catch::Contains("score: ") && !Catch::Contains("wrong"));
        const test::RunResult failed = test::run_command(check + wrong + " 2>&1");
        CHECK(failed.status == 1);
        CHECK_THAT(failed.output,
                   Catch::Contains("wrong: you answered '7'") && Catch::Contains("score: 0/"));
        // mha on PATH works as well as MHA=; run from another folder, too.
        const test::RunResult on_path =
            test::run_command("cd / && PATH=" + test::mha_dir() + ":$PATH sh " + copy +
                              "/check.sh " + copy + "/solution.txt 2>&1");
        CHECK(on_path.status == 0);
        // Misuse is exit 2 and one line, never a grade: no answers file, a missing one, no mha.
        for (const std::string& misuse :
             {check + "2>&1", check + "no-such-answers.txt 2>&1",
              in_copy + "PATH=/nonexistent MHA= /bin/sh check.sh solution.txt 2>&1"}) {
            CAPTURE(misuse);
            const test::RunResult r = test::run_command(misuse);
            CHECK(r.status == 2);
            CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
            CHECK_THAT(r.output, !Catch::Contains("score"));
        }
        // with no file, it says what to pass, not mha grade's own usage
        CHECK(test::run_command(check + "2>&1").output ==
              "usage: sh check.sh ANSWERS.txt (a file of your answers, one a line; solution.txt "
              "is the teacher's)\n");
        test::run_command("rm -rf " + copy);
    }
    std::remove(wrong.c_str());
}

TEST_CASE("the bash completion completes options, choices and the quiz", "[docs]") {
    const auto complete = [](const std::string& words) {
        return test::run_command("bash -c '. ../docs/mha.bash; COMP_WORDS=(" + words +
                                 "); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _mha; "
                                 "echo \"${COMPREPLY[*]}\"'")
            .output;
    };
    CHECK(complete("mha --forma") == "--format\n");
    CHECK(complete("mha --form p") == "packed per-head\n");
    CHECK(complete("mha --format m") == "markdown\n");
    CHECK(complete("mha --causal = to") == "top-left\n");  // --causal=to, split at the "="
    CHECK(complete("mha qu") == "quiz\n");
    CHECK(complete("mha quiz --to") == "--topics\n");
    CHECK(complete("mha quiz --topics kv") == "kv-cache\n");
    CHECK(complete("mha tr") == "train\n");
    CHECK(complete("mha train --time") == "--time-limit\n");
}

// docs/lesson.md's teaching table: | question | `command` | `a line of its output` |; a line
// the output wraps is found across the wrap
TEST_CASE("every row of the teaching table in docs/lesson.md runs and prints its answer line",
          "[docs][lesson]") {
    const std::string page = test::read_text("../docs/lesson.md");
    const std::size_t start = page.find("## The seeds' questions, one command each");
    REQUIRE(start != std::string::npos);
    const std::regex row("^\\| (.+) \\| `([^`]+)` \\| `([^`]+)` \\|$");
    const std::string scratch = test::temp_path("lesson-table");
    std::size_t rows = 0;
    for (const std::string& line : lines_of(page.substr(start))) {
        std::smatch cells;
        if (!std::regex_match(line, cells, row)) continue;
        const std::string command = cells[2].str(), answer = cells[3].str();
        CAPTURE(cells[1].str(), command, answer);
        const test::RunResult r = run_in_scratch(scratch, command);
        INFO(r.output);
        CHECK(r.status == 0);
        CHECK(test::flat(r.output).find(test::flat(answer)) != std::string::npos);
        ++rows;
    }
    test::run_command("rm -rf " + scratch);
    CHECK(rows == 18);
}

// docs/lesson.md's timetable: | A–B | segment | `command`; `command` |. The segments follow
// one another from minute 0 to minute 50, each has its section below ("## A–B min: ..."), and
// every command runs in order in one folder, as in class; mha train, which runs for minutes
// in class, gets --time-limit 2 (its checkpoint is what a later row opens).
TEST_CASE("docs/lesson.md's timetable adds up to 50 minutes and every command in it runs",
          "[docs][lesson]") {
    const std::string page = test::read_text("../docs/lesson.md");
    const std::size_t start = page.find("## The timetable");
    REQUIRE(start != std::string::npos);
    const std::size_t end = page.find("\n## ", start + 1);
    const std::regex row("^\\| ([0-9]+)–([0-9]+) \\| (.+) \\| (.+) \\|$");
    const std::regex quoted("`([^`]+)`");
    const std::string scratch = test::temp_path("lesson-timetable");
    test::run_command("rm -rf " + scratch);
    int minute = 0, total = 0;
    std::size_t commands = 0;
    for (const std::string& line : lines_of(page.substr(start, end - start))) {
        std::smatch cells;
        if (!std::regex_match(line, cells, row)) continue;
        const int from = std::stoi(cells[1].str()), to = std::stoi(cells[2].str());
        CAPTURE(line);
        CHECK(from == minute);
        CHECK(to > from);
        total += to - from;
        minute = to;
        CHECK(page.find("\n## " + cells[1].str() + "–" + cells[2].str() + " min: ") !=
              std::string::npos);
        const std::string listed = cells[4].str();
        std::size_t in_row = 0;
        for (auto it = std::sregex_iterator(listed.begin(), listed.end(), quoted);
             it != std::sregex_iterator(); ++it, ++in_row) {
            std::string command = (*it)[1].str();
            if (command.rfind("mha train", 0) == 0) command += " --time-limit 2";
            CAPTURE(command);
            const test::RunResult r = run_in_scratch(scratch, command);
            INFO(r.output);
            CHECK(r.status == 0);
            ++commands;
        }
        CHECK(in_row > 0);
    }
    test::run_command("rm -rf " + scratch);
    CHECK(total == 50);
    CHECK(minute == 50);
    CHECK(commands >= 8);
    // the class starts training first, and the page hands out the student's page
    CHECK(page.find("| 0–3 | Start training") != std::string::npos);
    CHECK(page.find("[handout.md](handout.md)") != std::string::npos);
    CHECK(page.find("# A 50-minute class") == 0);
}

// docs/handout.md: every shape its table gives is one `mha --trace` prints, so the page a
// student takes home stays true to the tool.
TEST_CASE("every shape on docs/handout.md is one mha --trace prints", "[docs][lesson]") {
    const std::string page = test::read_text("../docs/handout.md");
    const test::RunResult trace = test::run_mha("--trace");
    REQUIRE(trace.status == 0);
    const std::set<std::string> shapes = matches(page, std::regex("`(\\(B=[^`]+\\))`"));
    CHECK(shapes.size() == 4);  // (B, N, d_model), (B, N, h, d_k), (B, h, N, d_k), (B, h, N, M)
    for (const std::string& shape : shapes) {
        CAPTURE(shape);
        CHECK(trace.output.find(shape + "  strides") != std::string::npos);
    }
    CHECK(trace.output.find("copied 16 KiB") != std::string::npos);
    CHECK(trace.output.find("parameters: 263,168") != std::string::npos);
}

// The README's learned-heads command fits an 80x24 terminal where it matters: its last 23
// lines (the 24th holds the prompt) are the prediction, the title, the legend and the whole
// map, and no line is wider than 80 columns.
TEST_CASE("the README's learned-heads command ends on its whole map in 80x24", "[docs]") {
    const std::string readme = test::read_text("../README.md");
    std::string command;
    for (const ConsoleExample& example : console_examples(readme)) {
        if (example.command.find("--model") != std::string::npos &&
            example.command.find("--heatmap") != std::string::npos)
            command = example.command;
    }
    REQUIRE(!command.empty());
    const std::string scratch = test::temp_path("readme-heads");
    const test::RunResult r = run_in_scratch(scratch, "COLUMNS=80 " + command);
    test::run_command("rm -rf " + scratch);
    REQUIRE(r.status == 0);
    const std::vector<std::string> lines = lines_of(r.output);
    REQUIRE(lines.size() > 23);
    const std::vector<std::string> screen(lines.end() - 23, lines.end());
    CAPTURE(r.output);
    CHECK(screen.front().rfind("next character: ", 0) == 0);
    CHECK(screen[1].rfind("heads 2, 0 of every layer", 0) == 0);
    CHECK(screen.back().rfind("14 m", 0) == 0);  // the last query of the 15 characters
    for (const std::string& line : lines) CHECK(code_points(line) <= 80);
}

// The README's build paragraph counts the files a fresh clone's make compiles (every .cpp
// under src/) and the units it compiles them in, as its [n/total] lines do: what a dry run
// of make into an empty build folder would compile.
TEST_CASE("the README counts the files and units make compiles", "[docs]") {
    std::size_t sources = 0;
    for (const auto& entry : fs::recursive_directory_iterator("../src"))
        sources += entry.path().extension() == ".cpp";
    const std::string fresh = test::temp_path("fresh-build");
    const test::RunResult dry = test::run_command(
        "cd .. && make -n --no-print-directory PROGRESS_DRY_RUN=1 BUILD=" + fresh + " " + fresh +
        "/mha | grep -c '^echo mha-progress-compile'");
    test::run_command("rm -rf " + fresh);
    const std::string units = std::to_string(std::stoul(dry.output));
    const std::string readme = test::read_text("../README.md");
    std::smatch count;
    REQUIRE(std::regex_search(readme, count, std::regex("compiles ([0-9]+)\\s+files")));
    CHECK(std::stoul(count[1].str()) == sources);
    CHECK_THAT(readme, Catch::Contains("files in " + units + " units"));
    CHECK_THAT(readme, Catch::Contains("/" + units + "] src/"));
}

}  // namespace test_docs
