#pragma once
// One option model for mha, mha bench and mha quiz: a table of options per command,
// one parser for all three (--name value, --name=value, -x value, -xvalue, --), a rule
// table checked once after parsing, and the --help text generated from the table.

#include "app/cli/config.h"
#include "app/cli/did_you_mean.h"
#include "app/cli/rules.h"
#include "core/error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mha {

extern const char* const version_text;

// What the parser, the help and the docs tests know of one row of an option table.
struct OptionInfo {
    std::string name;   // "--batch"; empty for a row that starts a help section
    char short_name;    // 'b', or 0
    std::string value;  // "B", "text|json|markdown" (its lowercase words are the choices);
                        // empty for a flag; "[=a|b]" for a flag that may take =a or =b

    // A flag that also takes an attached value: --causal or --causal=top-left.
    bool optional_value() const { return !value.empty() && value.front() == '['; }
    std::string help;  // the help lines, '\n' between them; a section row: its heading

    // The fixed choices of value: "I|mean" -> {"mean"}; "B" -> {}.
    std::vector<std::string> choices() const;
};

// A command: "" (mha itself), "bench" or "quiz", its help around the options, its rows.
struct CommandInfo {
    std::string name;
    std::string intro, epilogue;  // the help text before and after the options
    std::string error_prefix;     // what errors put before an option's name: "quiz "
    std::vector<OptionInfo> options;
    std::vector<std::string> subcommands;  // mha's: bench, quiz (for "did you mean")
};

// The value given to an option, and the name its errors use ("--batch", "quiz --count").
struct Arg {
    std::string option, text;
};

// One row of a command's table: what --help says, and what the option sets.
template <typename Target>
struct Option {
    OptionInfo info;
    void (*apply)(Target&, const Arg&);  // null for a section row
};

// A row that starts a help section: a blank line, then the heading (if any).
template <typename Target>
Option<Target> section(const char* heading) {
    return {{"", 0, "", heading}, nullptr};
}

// One option given on the command line: the row of the table and its value.
struct Given {
    std::size_t row;
    Arg arg;
};

// The one parser: args (the words after the command) -> the rows given, in order.
// Throws mha::Error for an unknown option (suggesting a near name), a missing value,
// a value given to a flag, or a stray argument.
std::vector<Given> read_options(const CommandInfo& command, const std::vector<std::string>& args);

// --help: intro, every section of the table, epilogue.
std::string help_text(const CommandInfo& command);

template <typename Target>
CommandInfo command_info(std::string name, std::string intro, std::string epilogue,
                         std::string error_prefix, const std::vector<Option<Target>>& table) {
    CommandInfo info{
        std::move(name), std::move(intro), std::move(epilogue), std::move(error_prefix), {}, {}};
    for (const Option<Target>& row : table) info.options.push_back(row.info);
    return info;
}

// Parses args into target through the table; returns the long names given, in order.
template <typename Target>
std::vector<std::string> apply_options(const CommandInfo& command,
                                       const std::vector<Option<Target>>& table,
                                       const std::vector<std::string>& args, Target& target) {
    std::vector<std::string> given;
    for (const Given& g : read_options(command, args)) {
        table[g.row].apply(target, g.arg);
        given.push_back(table[g.row].info.name);
    }
    return given;
}

// mha's own options (not bench's or quiz's).
const CommandInfo& mha_command();

// args excludes the program name. Throws mha::Error on any bad option or value, or
// options that contradict each other (the rule table in config.cpp).
Config parse_args(const std::vector<std::string>& args);

std::string help_text();

// Option values, shared with the subcommands; each error names arg.option.
std::uint64_t parse_unsigned(const Arg& arg);
// A whole number from 1 to max.
std::size_t parse_count(const Arg& arg, std::uint64_t max);

// A comma-separated list of 1 to 16 such numbers ("1,8,16"), each from 1 to max.
std::vector<std::size_t> parse_count_list(const Arg& arg, std::uint64_t max);
// A comma-separated list of 1 to `most` whole numbers from 0 ("1,17,0"), each below max.
std::vector<std::size_t> parse_index_list(const Arg& arg, std::uint64_t max, std::size_t most);
// A file name: not empty.
std::string parse_path(const Arg& arg);
// "512M", "2G", "1048576": bytes, with an optional binary suffix K, M, G or T (KiB ... TiB).
std::uint64_t parse_bytes(const Arg& arg);
// A finite number above 0: "50", "1.5", "5e5".
double parse_positive(const Arg& arg);
// --max-time's seconds (parse_positive), or none for "off".
std::optional<double> parse_seconds_or_off(const Arg& arg);

}  // namespace mha
