#pragma once
// `mha grade ANSWERS`: grades a learner's answers file against a key read from stdin,
// one key line per answer. A key line names what the answer is (a shape, strides, a
// count, keys, a word) and the mha options whose trace gives it, so the expected
// answer and the trace lines behind it come from the tool itself. The exercises'
// check.sh scripts are a key each.

#include "app/cli/cli.h"

#include <iostream>
#include <string>
#include <vector>

namespace mha {

// args are the words after "grade". Prints one verdict per answer and the score.
// Returns 0 when every answer is right, 1 otherwise; throws mha::Error on misuse
// (no answers file, a key line it cannot read).
int run_grade(const std::vector<std::string>& args, std::istream& key, std::ostream& out);

// Its options and --help, for the docs tests.
const CommandInfo& grade_command();

}  // namespace mha
