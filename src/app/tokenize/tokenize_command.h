#pragma once
// `mha tokenize --checkpoint DIR --text T`: the folder's tokenizer on a text, token by token
// (id, byte span, piece), the ids alone (--ids), or every stage's work (--trace).

#include "app/cli/cli.h"
#include "tokenize/tokenizer.h"

#include <iostream>
#include <string>
#include <vector>

namespace mha {

// args are the words after "tokenize". Returns 0; throws mha::Error on bad options, files or
// text.
int run_tokenize(const std::vector<std::string>& args, std::ostream& out);

// What `mha tokenize ARGS --trace` computes, for mha grade: the text, its tokens and every
// stage's trace. Throws mha::Error as run_tokenize does.
struct TokenizeFacts {
    std::string text;
    std::vector<tokenizers::TokenPiece> tokens;
    tokenizers::TokenizeTrace trace;
};
TokenizeFacts tokenize_facts(const std::vector<std::string>& args);

// Its options and --help, for the docs tests.
const CommandInfo& tokenize_command();

}  // namespace mha
