// docs/errors.md, the catalogue of rejected inputs, run row by row: each command must print
// exactly its message as one line "mha: error: ..." on stderr and nothing on stdout, exit
// with its status, and leave no regular file in $OUT.

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "app/cli/cli.h"
#include "helpers.h"
#include "io/npy.h"

namespace test_errors {

namespace fs = std::filesystem;

namespace {

struct Row {
    std::string what, command, message;
    int status = 0;
};

// The cells of a Markdown table line "| a | `b` | c |": split at unescaped '|', trimmed,
// "\|" unescaped, one pair of surrounding backticks removed.
std::vector<std::string> cells(const std::string& line) {
    std::vector<std::string> result;
    std::string cell;
    for (std::size_t i = 1; i < line.size(); ++i) {
        if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == '|') {
            cell += line[++i];
        } else if (line[i] == '|') {
            result.push_back(cell);
            cell.clear();
        } else {
            cell += line[i];
        }
    }
    for (std::string& c : result) {
        c.erase(0, c.find_first_not_of(' '));
        c.erase(c.find_last_not_of(' ') + 1);
        if (c.size() >= 2 && c.front() == '`' && c.back() == '`') c = c.substr(1, c.size() - 2);
    }
    return result;
}

// Every row of every table whose header is "| what | command | message | exit |".
std::vector<Row> catalogue() {
    std::ifstream file("../docs/errors.md");
    REQUIRE(file);
    const std::vector<std::string> header = {"what", "command", "message", "exit"};
    std::vector<Row> rows;
    bool in_table = false;
    for (std::string line; std::getline(file, line);) {
        if (line.rfind("|", 0) != 0) {
            in_table = false;
            continue;
        }
        const std::vector<std::string> c = cells(line);
        if (c == header) {
            in_table = true;
        } else if (in_table && c.size() == 4 && c[0].find_first_not_of('-') != std::string::npos) {
            rows.push_back({c[0], c[1], c[2], std::stoi(c[3])});
        }
    }
    return rows;
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
    for (std::size_t at = text.find(from); at != std::string::npos;
         at = text.find(from, at + to.size())) {
        text.replace(at, from.size(), to);
    }
    return text;
}

std::vector<std::string> regular_files_in(const fs::path& dir) {
    std::vector<std::string> names;
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
        if (entry.is_regular_file()) names.push_back(entry.path().filename().string());
    }
    return names;
}

struct RowResult {
    test::RunResult run;  // its stderr and exit status
    std::string stdout_text;
};

// Runs the row's command in sh from tests/data/bad, with `mha` the binary under test and
// $OUT an empty folder; returns what it printed on stderr, its exit status and its stdout.
RowResult run_row(const Row& row, const fs::path& out) {
    const fs::path script = out.string() + ".sh", printed = out.string() + ".stdout";
    std::ofstream(script) << "mha() { '" << fs::absolute(test::mha_binary()).string()
                          << "' \"$@\"; }\ncd data/bad\nOUT='" << out.string() << "'\n"
                          << row.command << "\n";
    RowResult result;
    result.run = test::run_command("sh '" + script.string() + "' 2>&1 >'" + printed.string() + "'");
    std::ifstream file(printed);
    result.stdout_text.assign(std::istreambuf_iterator<char>(file),
                              std::istreambuf_iterator<char>());
    fs::remove(script);
    fs::remove(printed);
    return result;
}

}  // namespace

TEST_CASE("docs/errors.md: every rejected input gives its message and exit status", "[catalogue]") {
    const std::vector<Row> rows = catalogue();
    REQUIRE(rows.size() > 50);
    for (const Row& row : rows) {
        const fs::path out = test::temp_path("errors-out");
        fs::remove_all(out);
        fs::create_directories(out);
        INFO(row.what << ": " << row.command);
        const RowResult result = run_row(row, out);
        const test::RunResult& r = result.run;
        CHECK(r.output == "mha: error: " + replace_all(row.message, "$OUT", out.string()) + "\n");
        CHECK(r.status == row.status);
        CHECK(result.stdout_text.empty());  // refused before anything is printed
        CHECK(regular_files_in(out).empty());
        fs::remove_all(out);
    }
}

TEST_CASE("docs/errors.md has a row for every option in --help") {
    std::string commands;
    for (const Row& row : catalogue()) commands += row.command + " ";
    std::istringstream help(mha::help_text());
    for (std::string word; help >> word;) {
        if (word.rfind("--", 0) != 0 || word.size() < 3) continue;
        const std::string option =
            word.substr(0, word.find_first_not_of("abcdefghijklmnopqrstuvwxyz-", 2));
        INFO(option);
        CHECK(commands.find(option) != std::string::npos);
    }
}

TEST_CASE("the memory budget counts a loaded mask") {
    // B=2, N=M=200, d_model=256, h=4 fits in 8 MiB (its seeded weights count as one 2 MiB
    // huge page); a float mask (B·h, N, M) adds 8·200·200·4 bytes = 1.25 MiB, and loading it
    // (file and decoded values) stays under 8 MiB.
    const std::string mask = test::temp_path("budget-mask.npy");
    std::ofstream(mask, std::ios::binary) << mha::npy::to_npy_bytes(mha::Tensor({8, 200, 200}));
    const std::string sizes = "-b 2 -n 200 -d 256 -H 4 --max-memory 8M";
    CHECK(test::run_mha(sizes).status == 0);
    const test::RunResult r = test::run_mha(sizes + " --mask " + mask);
    CHECK(r.status == 2);
    CHECK(r.output ==
          "mha: error: this configuration needs 8.5 MiB on the streaming path (B=2 N=200 "
          "M=200 d_model=256 h=4), more than --max-memory 8 MiB; raise --max-memory, "
          "shrink the sizes, or trace with --shapes-only\n");
    fs::remove(mask);
}

}  // namespace test_errors
