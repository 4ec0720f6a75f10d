#pragma once
// `mha train`: trains the character model of examples/models/README.md (kjv-2x4's recipe by
// default) on the shipped corpus or --corpus, evaluates it as it goes, and writes a model file
// `mha --model` reads, with the state --resume goes on from.

#include <string>
#include <vector>

#include "app/cli/cli.h"

namespace mha {

// args: what follows "train" on the command line. Returns the exit status (130 after Ctrl-C,
// with the checkpoint saved); throws mha::Error on bad options or input.
int run_train(const std::vector<std::string>& args);

// Its options, for --help and the docs tests.
const CommandInfo& train_command();

}  // namespace mha
