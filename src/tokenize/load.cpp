// Which tokenizer files a folder holds, and reading them.

#include "tokenize/load.h"

#include "core/error.h"
#include "tokenize/tokenizer_json_read.h"
#include "tokenize/vocab_merges.h"

#include <filesystem>

namespace mha::tokenizers {

namespace {

bool exists(const std::string& path) {
    std::error_code failed;
    return std::filesystem::exists(path, failed);
}

}  // namespace

Tokenizer load_tokenizer(const std::string& dir, Ledger& ledger) {
    std::error_code failed;
    if (!std::filesystem::is_directory(dir, failed)) {
        throw Error("cannot read the tokenizer folder '" + dir +
                    "': " + (exists(dir) ? "not a directory" : "No such file or directory"));
    }
    if (exists(dir + "/tokenizer.json"))
        return Tokenizer(read_tokenizer_json(dir + "/tokenizer.json", ledger));
    const bool vocab = exists(dir + "/vocab.json"), merges = exists(dir + "/merges.txt");
    if (vocab && merges) return Tokenizer(gpt2_stages(dir, ledger));
    if (vocab || merges) {
        throw Error(dir + " has " +
                    (vocab ? "vocab.json but no merges.txt" : "merges.txt but no vocab.json") +
                    "; GPT-2's tokenizer needs both");
    }
    throw Error(
        dir + " holds no tokenizer files (expected tokenizer.json, or vocab.json and merges.txt)");
}

}  // namespace mha::tokenizers
