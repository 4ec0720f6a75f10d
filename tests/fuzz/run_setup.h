#pragma once
// The whole run setup for one fuzz input, shared by fuzz_run (libFuzzer) and the suite, which
// replays tests/fuzz/corpus/run. The input is a command line (one argument per line) followed
// by up to three files, each after a line "@@@@"; an argument "@1", "@2" or "@3" names that
// file. Then, as mha does: parse, load and check the files within the memory ledger, plan the
// run, bound the SVG, and compute the pass (with a budget of at most 8 MiB, so an input stays
// quick). Nothing is written: --save is dropped after it is parsed, and the SVG only sized.

#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "app/cli/cli.h"
#include "app/run/after_run.h"
#include "app/run/problem.h"
#include "app/run/variants.h"
#include "core/error.h"

namespace mha::fuzz {

inline constexpr std::string_view separator = "\n@@@@\n";
inline constexpr std::uint64_t max_budget = std::uint64_t(8) << 20;

// "/tmp/mha-fuzz-<pid>-<n>", written with the section's bytes.
inline std::string write_file(std::size_t n, std::string_view bytes) {
    const std::string path =
        "/tmp/mha-fuzz-" + std::to_string(::getpid()) + "-" + std::to_string(n);
    std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
    return path;
}

inline std::vector<std::string> arguments(std::string_view text,
                                          const std::vector<std::string>& files) {
    std::vector<std::string> args;
    for (std::size_t start = 0; start <= text.size();) {
        const std::size_t end = std::min(text.find('\n', start), text.size());
        std::string arg(text.substr(start, end - start));
        for (std::size_t i = 0; i < files.size(); ++i) {
            if (arg == "@" + std::to_string(i + 1)) arg = files[i];
        }
        args.push_back(arg);
        start = end + 1;
    }
    return args;
}

// The message of the mha::Error the setup threw, or "" when it ran to the end.
inline std::string run_setup(std::string_view input) {
    std::vector<std::string_view> sections;
    for (std::size_t start = 0;;) {
        const std::size_t end = input.find(separator, start);
        sections.push_back(input.substr(start, end == std::string_view::npos ? end : end - start));
        if (end == std::string_view::npos || sections.size() == 4) break;
        start = end + separator.size();
    }
    std::vector<std::string> files;
    for (std::size_t i = 1; i < sections.size(); ++i) files.push_back(write_file(i, sections[i]));
    std::string message;
    try {
        Config config = parse_args(arguments(sections[0], files));
        if (!config.help && !config.version && !config.list_presets && !config.shapes_only) {
            config.max_memory = std::min(config.max_memory, max_budget);
            config.save_path.clear();
            const Problem problem = build_problem(config);
            check_svg_size(config, problem.info);
            NullTracer quiet;
            run_pass(config, problem, quiet);
        }
    } catch (const Error& error) {
        message = error.what();
    }
    for (const std::string& file : files) ::unlink(file.c_str());
    return message;
}

}  // namespace mha::fuzz
