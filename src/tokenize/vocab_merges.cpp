// Reading vocab.json and merges.txt into GPT-2's tokenizer stages.

#include "tokenize/vocab_merges.h"

#include "core/checked.h"
#include "core/error.h"
#include "io/json.h"
#include "io/printable.h"
#include "io/read_file.h"

#include <algorithm>
#include <limits>

namespace mha::tokenizers {

namespace {

// About the bytes of vocab.json per token ("\"\\u0120the\": 262, "), to reserve the entries once.
constexpr std::size_t bytes_per_entry = 16;

constexpr std::size_t merge_batch = 4096;  // merges.txt lines handed to the model at once

// A number written as at most nine digits (every id a vocabulary gives), read without the
// general path; false for anything else, which as_size then reads or refuses.
bool plain_id(const json::Value& value, std::uint32_t& id) {
    if (value.kind != json::Kind::number || value.text.empty() || value.text.size() > 9)
        return false;
    std::uint32_t n = 0;
    for (const char c : value.text) {
        if (c < '0' || c > '9') return false;
        n = n * 10 + static_cast<std::uint32_t>(c - '0');
    }
    id = n;
    return true;
}

}  // namespace

std::vector<std::pair<std::string, std::uint32_t>> read_vocab_json(const std::string& path,
                                                                   Ledger& ledger) {
    const std::string text = read_file(path, ledger);
    const std::uint64_t tree = json::parse_bytes(text);
    ledger.check(tree, path, "its JSON needs " + byte_size(tree) + " to parse");
    ledger.hold(tree);
    const json::Where where{path, ""};
    std::vector<std::pair<std::string, std::uint32_t>> entries;
    entries.reserve(text.size() / bytes_per_entry);
    // each member as it is read: the vocabulary is never held as a tree of 50,000 values
    json::parse_members(text, path, [&](std::string&& token, json::Value&& value) {
        std::uint32_t id = 0;
        if (!plain_id(value, id)) {  // the error names the key: a path built only here
            const json::Where at = where.at(token);
            const std::uint64_t size = json::as_size(value, at);
            if (size > std::numeric_limits<std::uint32_t>::max())
                json::refuse(at, value, "expected a token id below 2^32, found " + value.text);
            id = static_cast<std::uint32_t>(size);
        }
        entries.emplace_back(std::move(token), id);
    });
    return entries;
}

void read_merges_txt(const std::string& path, BpeModel& model, Ledger& ledger) {
    const std::string text = read_file(path, ledger);
    model.reserve_merges(static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1);
    std::vector<MergeText> batch;  // lines first_line, first_line + 1, ... not yet added
    std::size_t first_line = 0, line_number = 0;
    const auto add_batch = [&] {
        model.add_merges(batch, [&](std::size_t i) {
            return path + " line " + std::to_string(first_line + i);
        });
        batch.clear();
    };
    for (std::size_t at = 0; at < text.size();) {
        std::size_t end = text.find('\n', at);
        if (end == std::string::npos) end = text.size();
        std::string_view line(text.data() + at, end - at);
        at = end + 1;
        ++line_number;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line_number == 1 && line.rfind("#version", 0) == 0) continue;
        const std::size_t space = line.find(' ');
        if (space == 0 || space == std::string_view::npos || space + 1 == line.size() ||
            line.find(' ', space + 1) != std::string_view::npos) {
            add_batch();  // the lines before it are added (or refused) first
            throw Error(path + " line " + std::to_string(line_number) +
                        ": expected two symbols separated by one space (\"a b\"), found '" +
                        escaped(line) + "'");
        }
        if (batch.empty()) first_line = line_number;
        batch.push_back({line.substr(0, space), line.substr(space + 1)});
        if (batch.size() == merge_batch) add_batch();
    }
    add_batch();
}

TokenizerStages gpt2_stages(const std::string& dir, Ledger& ledger) {
    const std::string vocab_path = dir + "/vocab.json";
    TokenizerStages stages;
    stages.source = dir + " (vocab.json + merges.txt: GPT-2's byte-level BPE)";
    stages.pre_tokenizer = std::make_unique<ByteLevelPreTokenizer>(Pattern::gpt2, false);
    stages.model =
        std::make_unique<BpeModel>(Vocabulary(read_vocab_json(vocab_path, ledger), vocab_path));
    read_merges_txt(dir + "/merges.txt", *stages.model, ledger);
    stages.decoder = std::make_unique<ByteLevelDecoder>();
    return stages;
}

}  // namespace mha::tokenizers
