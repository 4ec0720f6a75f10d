#pragma once
// `mha quiz`: shape and cost questions on seeded random configurations, asked on
// the terminal or graded from an answers file (--answers) for autograding.

#include <iostream>
#include <string>
#include <vector>

#include "app/cli/cli.h"

namespace mha {

// args are the words after "quiz"; answers are read from in unless --answers is
// given, and echoed when in is not a terminal (the terminal echoes them itself).
// Returns the exit status: 0 passed (or only printed), 1 failed the pass mark.
// Throws mha::Error on bad options.
int run_quiz(const std::vector<std::string>& args, std::istream& in, bool in_is_terminal,
             std::ostream& out);

// Its options, for --help and the docs tests.
const CommandInfo& quiz_command();

}  // namespace mha
