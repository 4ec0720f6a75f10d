// `mha tokenize`: options, reading the tokenizer and the text within --max-memory, printing.

#include "app/tokenize/tokenize_command.h"

#include "app/cli/terminal.h"
#include "core/checked.h"
#include "core/error.h"
#include "io/ledger.h"
#include "io/read_file.h"
#include "show/tokens.h"
#include "tokenize/load.h"

#include <optional>

namespace mha {

namespace {

struct TokenizeOptions {
    std::string checkpoint;
    std::optional<std::string> text;
    std::string text_file;
    bool ids = false;
    bool no_special = false;
    bool trace = false;
    std::uint64_t max_memory = std::uint64_t(2) << 30;
    bool help = false;
};

using O = TokenizeOptions;

const std::vector<Option<O>>& tokenize_table() {
    static const std::vector<Option<O>> table = {
        section<O>("Input:"),
        {{"--checkpoint", 0, "DIR",
          "the folder with the tokenizer files: tokenizer.json,\n"
          "or vocab.json and merges.txt (GPT-2); no config or\n"
          "weights needed"},
         [](O& o, const Arg& a) { o.checkpoint = parse_path(a); }},
        {{"--text", 0, "T", "the text to tokenize (valid UTF-8)"},
         [](O& o, const Arg& a) { o.text = a.text; }},
        {{"--text-file", 0, "FILE", "the text from a file, for texts longer than a command line"},
         [](O& o, const Arg& a) { o.text_file = parse_path(a); }},
        section<O>("Output:"),
        {{"--ids", 0, "", "only the ids, space-separated, on one line"},
         [](O& o, const Arg&) { o.ids = true; }},
        {{"--no-special", 0, "", "leave out the special tokens the post-processor adds"},
         [](O& o, const Arg&) { o.no_special = true; }},
        {{"--trace", 0, "",
          "every stage in order: normalizer, the pre-tokenizer's\n"
          "pieces (and the pattern branch that matched each), the\n"
          "bytes as symbols, every merge with its rank, byte\n"
          "fallback, the special tokens added"},
         [](O& o, const Arg&) { o.trace = true; }},
        section<O>("Limits:"),
        {{"--max-memory", 0, "SIZE", "refuse files and texts needing more memory (default 2G)"},
         [](O& o, const Arg& a) { o.max_memory = parse_bytes(a); }},
        {{"--help", 'h', "", "this help"}, [](O& o, const Arg&) { o.help = true; }},
    };
    return table;
}

void check_options(const O& o) {
    if (o.checkpoint.empty())
        throw Error("tokenize needs --checkpoint DIR, the folder with the tokenizer files");
    if (o.text && !o.text_file.empty())
        throw Error("tokenize takes --text or --text-file, not both");
    if (!o.text && o.text_file.empty()) throw Error("tokenize needs --text T or --text-file FILE");
    if (o.ids && o.trace)
        throw Error("tokenize --ids prints only the ids; --trace prints the stages: choose one");
}

// The folder's tokenizer and the text, read within --max-memory, with room to tokenize it.
struct Loaded {
    tokenizers::Tokenizer tokenizer;
    std::string text;
    std::string what;  // "--text" or "--text-file FILE", for errors
};

Loaded loaded(const O& o) {
    check_options(o);
    Ledger ledger(o.max_memory);
    const std::string what = o.text ? "--text" : "--text-file " + o.text_file;
    std::string text = o.text ? *o.text : read_file(o.text_file, ledger);
    ledger.hold(text.size());
    Loaded l{tokenizers::load_tokenizer(o.checkpoint, ledger), std::move(text), what};
    const std::uint64_t need = checked_product(
        {l.text.size(), l.tokenizer.stages().bytes_per_text_byte}, "the text's tokens");
    ledger.check(need, what,
                 "tokenizing its " + byte_size(l.text.size()) + " needs up to " + byte_size(need),
                 "a shorter text");
    return l;
}

// The text's tokens (with every stage's trace when traced).
struct Tokenized {
    tokenizers::Tokenizer tokenizer;
    TokenizeFacts facts;
};

Tokenized tokenized(const O& o, bool traced) {
    Loaded l = loaded(o);
    Tokenized t{std::move(l.tokenizer), {std::move(l.text), {}, {}}};
    t.facts.tokens = t.tokenizer.encode(t.facts.text, !o.no_special,
                                        traced ? &t.facts.trace : nullptr, l.what);
    return t;
}

}  // namespace

int run_tokenize(const std::vector<std::string>& args, std::ostream& out) {
    O o;
    apply_options(tokenize_command(), tokenize_table(), args, o);
    if (o.help) {
        out << help_text(tokenize_command());
        return 0;
    }
    if (o.ids) {
        const Loaded l = loaded(o);
        print_ids(out, l.tokenizer.encode_ids(l.text, !o.no_special, l.what));
        return 0;
    }
    const Tokenized t = tokenized(o, o.trace);
    out << "tokenizer: " << t.tokenizer.stages().source << "\n";
    if (o.trace) {
        print_tokenize_trace(out, t.facts.text, t.facts.trace,
                             t.tokenizer.stages().model->vocabulary(), !o.no_special);
        out << "tokens:\n";
    }
    print_tokens(out, t.facts.text, t.facts.tokens);
    return 0;
}

TokenizeFacts tokenize_facts(const std::vector<std::string>& args) {
    O o;
    apply_options(tokenize_command(), tokenize_table(), args, o);
    return tokenized(o, true).facts;
}

const CommandInfo& tokenize_command() {
    static const CommandInfo command = command_info<O>(
        "tokenize", R"(Usage: mha tokenize --checkpoint DIR (--text T | --text-file FILE) [options]
Tokenizes the text with the folder's tokenizer, as Hugging Face's tokenizers
do, and prints each token's id, the bytes of the text it came from, and its
piece as the vocabulary writes it (GPT-2 writes a space as Ġ, a newline as Ċ).
The text must be valid UTF-8.
)",
        R"(Examples:
  mha tokenize --checkpoint gpt2 --text "Hello world"
  mha tokenize --checkpoint gpt2 --text "don't stop" --trace
  mha tokenize --checkpoint gpt2 --text-file book.txt --ids > ids.txt
)",
        "tokenize ", tokenize_table());
    return command;
}

}  // namespace mha
