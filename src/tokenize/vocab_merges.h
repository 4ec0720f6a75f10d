#pragma once
// GPT-2's tokenizer files: vocab.json (token -> id) and merges.txt ("#version" line, then one
// merge "a b" per line, rank 0 first), read within the memory ledger.

#include "io/ledger.h"
#include "tokenize/bpe.h"
#include "tokenize/tokenizer.h"

#include <string>
#include <utility>
#include <vector>

namespace mha::tokenizers {

// vocab.json's entries. Throws mha::Error naming the file, key and byte for anything that is
// not an object of non-negative integer ids below 2^32, and before parsing when its JSON tree
// does not fit in what the ledger has left (it then holds the tree's bytes).
std::vector<std::pair<std::string, std::uint32_t>> read_vocab_json(const std::string& path,
                                                                   Ledger& ledger);

// merges.txt's merges added to the model in order. Throws mha::Error "PATH line N: ..." for a
// line that is not two symbols separated by one space, or a merge the vocabulary disagrees with.
void read_merges_txt(const std::string& path, BpeModel& model, Ledger& ledger);

// GPT-2's stages from DIR/vocab.json and DIR/merges.txt.
TokenizerStages gpt2_stages(const std::string& dir, Ledger& ledger);

}  // namespace mha::tokenizers
