#pragma once
// Finding and reading the tokenizer of a checkpoint folder.

#include "io/ledger.h"
#include "tokenize/tokenizer.h"

#include <string>

namespace mha::tokenizers {

// The tokenizer in DIR: tokenizer.json when there is one, else vocab.json + merges.txt (GPT-2). Throws mha::Error when DIR holds no
// tokenizer files, or only one of the pair, and for anything wrong in them; reads are bounded
// by the ledger.
Tokenizer load_tokenizer(const std::string& dir, Ledger& ledger);

}  // namespace mha::tokenizers
