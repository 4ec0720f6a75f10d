#pragma once
// Shared by the test files: running the built binary, comparing tensors, temp paths.

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "core/tensor/tensor.h"
#include "io/init.h"

namespace test {

struct RunResult {
    int status;
    std::string output;  // stdout and stderr together
};

// Runs a shell command and collects what it prints.
inline RunResult run_command(const std::string& command) {
    FILE* pipe = popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    std::string output;
    char buffer[4096];
    std::size_t n;
    while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, n);
    const int status = pclose(pipe);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

// The whole file as bytes; the test fails if it cannot be opened.
inline std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE(in);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// The binary under test, relative to tests/ (where the tests run): $MHA_BINARY, which
// make sets for each build folder, or ../build/mha.
inline std::string mha_binary() {
    const char* binary = std::getenv("MHA_BINARY");
    return binary && *binary ? binary : "../build/mha";
}

// The absolute folder of the binary under test, for PATH.
inline std::string mha_dir() {
    return std::filesystem::canonical(mha_binary()).parent_path().string();
}

// Runs a shell command and returns the peak resident memory of the process it
// execs, in KiB (Linux's ru_maxrss); -1 if it did not exit with `status` (0: it ran).
inline long peak_rss_kib(const std::string& command, int status = 0) {
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        execl("/bin/sh", "sh", "-c", ("exec " + command).c_str(), static_cast<char*>(nullptr));
        _exit(127);
    }
    int ended = 0;
    struct rusage usage {};
    REQUIRE(wait4(child, &ended, 0, &usage) == child);
    return WIFEXITED(ended) && WEXITSTATUS(ended) == status ? usage.ru_maxrss : -1;
}

// The text with every run of spaces and newlines as one space: a line the output wraps
// reads as one line again.
inline std::string flat(const std::string& text) {
    std::string joined;
    for (const char c : text) {
        const bool space = c == ' ' || c == '\n';
        if (!(space && !joined.empty() && joined.back() == ' ')) joined += space ? ' ' : c;
    }
    return joined;
}

// Runs the binary under test with the given argument string.
inline RunResult run_mha(const std::string& args, bool with_stderr = true) {
    return run_command(mha_binary() + " " + args + (with_stderr ? " 2>&1" : " 2>/dev/null"));
}

// The steps of a text trace: from the first step's line to the blank line after the last,
// without the header (sizes, weights, parameters) or the footer (output, wall time), and
// without the notes (lines from "    · " on), some of which word what only the computation
// knows (MLA's absorbed difference, --flash-row's tiles, the backward's D check). The
// backward's steps (b14 ... b0) count as steps.
inline std::string trace_steps(const std::string& output) {
    static const std::regex step_line("^ ?b?[0-9]+  [a-z_-]+ +.*$");
    std::istringstream lines(output);
    std::vector<std::string> body;
    std::size_t last_step = 0;
    bool started = false;
    bool in_note = false;
    for (std::string line; std::getline(lines, line);) {
        const bool is_step = std::regex_match(line, step_line);
        in_note = line.rfind("    · ", 0) == 0 || (in_note && line.rfind("      ", 0) == 0);
        if (in_note) continue;
        started = started || is_step;
        if (!started) continue;
        if (is_step) last_step = body.size();
        body.push_back(line);
    }
    std::size_t end = last_step;
    while (end < body.size() && !body[end].empty()) ++end;
    std::string steps;
    for (std::size_t i = 0; i < end; ++i) steps += body[i] + "\n";
    return steps;
}

// Runs the binary with args and checks it refused them: exit status 2 and exactly
// one line, "mha: error: ...", that contains message.
inline void check_rejected(const std::string& args, const std::string& message) {
    CAPTURE(args);
    const RunResult r = run_mha(args);
    CHECK(r.status == 2);
    CHECK_THAT(r.output, Catch::StartsWith("mha: error: ") && Catch::Contains(message));
    CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
}

// A case of a PyTorch fixture list (data/cases.txt, data/grad_cases.txt, ...): its folder and
// the mha options it runs with.
struct FixtureCase {
    std::string name;
    std::string options;  // e.g. "--heads 4 --causal"
};

// The cases of a list file: "<folder> <options>" a line, '#' lines and blank lines skipped.
inline std::vector<FixtureCase> read_cases(const std::string& path) {
    std::ifstream file(path);
    REQUIRE(file);
    std::vector<FixtureCase> cases;
    for (std::string line; std::getline(file, line);) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream words(line);
        FixtureCase c;
        words >> c.name;
        std::getline(words, c.options);
        cases.push_back(c);
    }
    return cases;
}

inline bool exists(const std::string& path) { return std::ifstream(path).good(); }

// --weights and --input, and --key, --value, --mask and --key-padding-mask for whichever of
// their files the case folder `dir` holds.
inline std::string fixture_options(const std::string& dir) {
    std::string args = " --weights " + dir + "weights.npz --input " + dir + "query.npy";
    if (exists(dir + "key.npy")) args += " --key " + dir + "key.npy --value " + dir + "value.npy";
    if (exists(dir + "mask.npy")) args += " --mask " + dir + "mask.npy";
    if (exists(dir + "key_padding_mask.npy"))
        args += " --key-padding-mask " + dir + "key_padding_mask.npy";
    return args;
}

// A path in the system's temp folder, unique to this test process.
inline std::string temp_path(const std::string& name) {
    return "/tmp/mha-tests-" + std::to_string(getpid()) + "-" + name;
}

// The arrays a run saves (args + " --save FILE"), as bytes; the run must succeed.
inline std::string saved_bytes(const std::string& args) {
    const std::string path = temp_path("saved.npz");
    const RunResult r = run_mha(args + " --save " + path);
    CAPTURE(args, r.output);
    REQUIRE(r.status == 0);
    const std::string bytes = read_text(path);
    std::remove(path.c_str());
    return bytes;
}

// count portable values uniform in [-scale, scale): stream `stream` of seed `seed`.
inline std::vector<float> random_values(std::size_t count, std::uint32_t stream, float scale = 1.0f,
                                        std::uint32_t seed = 7) {
    mha::Random random(seed, stream);
    std::vector<float> values(count);
    for (float& v : values) v = random.uniform(-scale, scale);
    return values;
}

// Whether x and y hold the same floats, bit for bit.
inline bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
    return x.size() == y.size() &&
           (x.empty() || std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0);
}

struct Difference {
    double worst = 0.0;
    std::size_t index = 0;
};

// The largest |a - b| over all elements, and where it is; NaN counts only where both are NaN.
inline Difference max_difference(const std::vector<float>& a, const std::vector<float>& b) {
    REQUIRE(a.size() == b.size());
    Difference d;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const double diff =
            (std::isnan(a[i]) && std::isnan(b[i])) ? 0.0 : std::fabs(double(a[i]) - b[i]);
        if (!(diff <= d.worst)) {
            d.worst = diff;
            d.index = i;
        }
    }
    return d;
}

// Fails with the index and the worst difference when any element differs by more than tolerance.
inline void require_close(const mha::Tensor& actual, const mha::Tensor& expected,
                          double tolerance) {
    REQUIRE(actual.shape() == expected.shape());
    const Difference d = max_difference(actual.to_vector(), expected.to_vector());
    INFO("worst difference " << d.worst << " at flat index " << d.index << " of shape "
                             << mha::to_string(expected.shape()));
    REQUIRE(d.worst <= tolerance);
}

}  // namespace test
