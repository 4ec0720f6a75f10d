#pragma once
// Reading tokenizer.json into the stages the encoder runs: each key that is read is checked
// (errors name the file, the key path and the byte), and each type, pattern or option that is
// not implemented is refused by name.

#include "io/ledger.h"
#include "tokenize/tokenizer.h"

#include <string>

namespace mha::tokenizers {

// PATH's tokenizer stages, read within the ledger (the file and its parse are held), with
// add_bos_token from a tokenizer_config.json beside it. Throws mha::Error with one line for
// anything it cannot read exactly.
TokenizerStages read_tokenizer_json(const std::string& path, Ledger& ledger);

}  // namespace mha::tokenizers
