#pragma once
// The command line: GNU-style options -> Config, and the --help text.

#include "app/config.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mha {

extern const char* const version_text;

// args excludes the program name. Throws mha::Error on any bad option or value.
Config parse_args(const std::vector<std::string>& args);

std::string help_text();

// Option values, shared with the subcommands. option names the option in the error.
std::uint64_t parse_unsigned(const std::string& option, const std::string& text);
// A whole number for option, from 1 to max; throws mha::Error naming the option.
std::size_t parse_count(const std::string& option, const std::string& text, std::uint64_t max);

}  // namespace mha
