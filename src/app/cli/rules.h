#pragma once
// The rules between options: a table of (name, broken, message) per command, checked once
// after parsing (app/cli/cli.h parses; config.cpp and the subcommands hold the tables).

#include <string>
#include <vector>

#include "core/error.h"

namespace mha {

// A rule between options: when broken(target) holds, parsing fails with message.
template <typename Target>
struct Rule {
    const char* name;  // "per-head-mask": a handle to find (and drop) the rule by
    bool (*broken)(const Target&);
    const char* message;
};

// Throws mha::Error with the message of the first broken rule, filled in by fill
// (when given) with what the target holds.
template <typename Target>
void check_rules(const std::vector<Rule<Target>>& rules, const Target& target,
                 std::string (*fill)(const std::string&, const Target&) = nullptr) {
    for (const Rule<Target>& rule : rules) {
        if (rule.broken(target)) throw Error(fill ? fill(rule.message, target) : rule.message);
    }
}

}  // namespace mha
