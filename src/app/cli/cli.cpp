// The one option parser of mha, mha bench and mha quiz; mha's own option table.

#include "app/cli/cli.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>

#include "app/cli/did_you_mean.h"
#include "app/cli/presets.h"
#include "core/error.h"
#include "show/text_layout.h"

namespace mha {

const char* const version_text = "mha 0.1.0";

std::uint64_t parse_unsigned(const Arg& arg) {
    const std::string& text = arg.text;
    const std::string expected = arg.option + " expects a whole number, got '" + text + "'";
    if (text.empty() || text.size() > 20) throw Error(expected);
    std::uint64_t value = 0;
    for (char c : text) {
        if (!std::isdigit(static_cast<unsigned char>(c))) throw Error(expected);
        const std::uint64_t digit = std::uint64_t(c - '0');
        if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) {
            throw Error(arg.option + " value '" + text + "' is too large");
        }
        value = value * 10 + digit;
    }
    return value;
}

std::size_t parse_count(const Arg& arg, std::uint64_t max) {
    const std::uint64_t value = parse_unsigned(arg);
    if (value == 0) throw Error(arg.option + " must be at least 1, got 0");
    if (value > max) {
        throw Error(arg.option + " must be at most " + std::to_string(max) + ", got " + arg.text);
    }
    return std::size_t(value);
}

// "1,8,16": whole numbers from 1 to max, at most 16 of them.
std::vector<std::size_t> parse_count_list(const Arg& arg, std::uint64_t max) {
    std::vector<std::size_t> counts;
    for (const std::string& item : split(arg.text, ','))
        counts.push_back(parse_count({arg.option, item}, max));
    if (counts.size() > 16) {
        throw Error(arg.option + " takes at most 16 values, got " + std::to_string(counts.size()));
    }
    return counts;
}

std::vector<std::size_t> parse_index_list(const Arg& arg, std::uint64_t max, std::size_t most) {
    std::vector<std::size_t> values;
    for (const std::string& item : split(arg.text, ',')) {
        const std::uint64_t value = parse_unsigned({arg.option, item});
        if (value >= max)
            throw Error(arg.option + " value '" + std::to_string(value) + "' is too large");
        values.push_back(std::size_t(value));
        if (values.size() > most) {
            throw Error(arg.option + " takes at most " + std::to_string(most) + " values");
        }
    }
    return values;
}

std::string parse_path(const Arg& arg) {
    if (arg.text.empty()) throw Error(arg.option + " expects a file name, got an empty string");
    return arg.text;
}

// --export-svg's file: a name ending in .svg (any case), since the file holds SVG text, with
// the command that makes a PNG of it; a device, pipe, socket or stream (/dev/..., /proc/...) is
// left for the writer to refuse.
std::string parse_svg_path(const Arg& arg) {
    const std::string path = parse_path(arg);
    std::error_code ignored;
    const auto kind = std::filesystem::status(path, ignored).type();
    const bool special = kind != std::filesystem::file_type::not_found &&
                         kind != std::filesystem::file_type::regular &&
                         kind != std::filesystem::file_type::directory;
    const std::string extension = lowercase(std::filesystem::path(path).extension().string());
    const bool system = path.rfind("/dev/", 0) == 0 || path.rfind("/proc/", 0) == 0;
    if (extension == ".svg" || special || system) return path;
    const std::string stem = std::filesystem::path(path).replace_extension().string();
    throw Error(arg.option + " " + path +
                ": the file is SVG text, so its name must end in .svg; for a PNG, write " + stem +
                ".svg and convert it: rsvg-convert -o " + stem + ".png " + stem + ".svg");
}

std::uint64_t parse_bytes(const Arg& arg) {
    std::string digits = arg.text;
    std::uint64_t unit = 1;
    const std::string suffixes = "KMGT";
    for (const std::string tail : {"iB", "B"}) {
        if (digits.size() > tail.size() &&
            digits.compare(digits.size() - tail.size(), tail.size(), tail) == 0) {
            digits.resize(digits.size() - tail.size());
            break;
        }
    }
    if (!digits.empty()) {
        const std::size_t power =
            suffixes.find(char(std::toupper(static_cast<unsigned char>(digits.back()))));
        if (power != std::string::npos) {
            unit = std::uint64_t(1) << (10 * (power + 1));
            digits.pop_back();
        }
    }
    const std::string& option = arg.option;
    const std::string expected = option + " expects a size like 512M or 2G, got '" + arg.text + "'";
    std::uint64_t value = 0;
    try {
        value = parse_unsigned({option, digits});
    } catch (const Error&) {
        throw Error(expected);
    }
    if (value == 0) throw Error(option + " must be more than 0, got '" + arg.text + "'");
    if (value > std::numeric_limits<std::uint64_t>::max() / unit)
        throw Error(option + " value '" + arg.text + "' is too large");
    return value * unit;
}

double parse_positive(const Arg& arg) {
    std::size_t used = 0;
    double value = 0.0;
    try {
        value = std::stod(arg.text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used == 0 || used != arg.text.size() || !std::isfinite(value) || value <= 0.0) {
        throw Error(arg.option + " expects a number above 0, got '" + arg.text + "'");
    }
    return value;
}

std::optional<double> parse_seconds_or_off(const Arg& arg) {
    if (arg.text == "off") return std::nullopt;
    return parse_positive(arg);
}

std::vector<std::string> OptionInfo::choices() const {
    std::vector<std::string> words;
    const std::string list = optional_value() ? value.substr(2, value.size() - 3) : value;
    if (list.find('|') == std::string::npos) return words;
    for (const std::string& word : split(list, '|')) {
        if (std::none_of(word.begin(), word.end(), [](char c) { return std::isupper(c); }))
            words.push_back(word);
    }
    return words;
}

std::vector<Given> read_options(const CommandInfo& command, const std::vector<std::string>& args) {
    const std::string see =
        " (see mha " + (command.name.empty() ? "" : command.name + " ") + "--help)";
    const std::string kind = command.name.empty() ? "option" : command.name + " option";
    std::vector<std::string> names;
    for (const OptionInfo& option : command.options) {
        if (!option.name.empty()) names.push_back(option.name);
    }
    const auto find = [&](const std::string& word, bool is_short) {
        for (std::size_t row = 0; row < command.options.size(); ++row) {
            const OptionInfo& option = command.options[row];
            if (option.name.empty()) continue;
            if (is_short ? option.short_name != 0 && word == std::string("-") + option.short_name
                         : option.name == word)
                return row;
        }
        throw Error("unknown " + kind + " '" + word + "'" +
                    (is_short ? "" : did_you_mean(word, names)) + see);
    };
    std::vector<Given> given;
    bool options_end = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& word = args[i];
        if (word == "--" && !options_end) {
            options_end = true;
            continue;
        }
        const bool is_long = word.rfind("--", 0) == 0 && word.size() > 2;
        const bool is_short = word.size() >= 2 && word[0] == '-' && word[1] != '-';
        if (options_end || (!is_long && !is_short)) {
            const auto& commands = command.subcommands;
            if (std::find(commands.begin(), commands.end(), word) != commands.end())
                throw Error("'" + word + "' is a command: it comes first, as in 'mha " + word +
                            " --help'; options before it are not its options");
            const std::string command_hint = did_you_mean(word, command.subcommands);
            if (!command_hint.empty())
                throw Error("unknown command '" + word + "'" + command_hint + see);
            if (command.name.empty())
                throw Error("unexpected argument '" + word + "'; options start with --" + see);
            throw Error("unknown " + kind + " '" + word + "'" + see);
        }
        const std::size_t split = is_long ? word.find('=') : 2;
        const std::size_t row = find(word.substr(0, split), is_short);
        const OptionInfo& option = command.options[row];
        const bool attached = split < word.size();
        const Arg arg{command.error_prefix + option.name,
                      attached ? word.substr(split + (is_long ? 1 : 0)) : ""};
        if (option.value.empty() || option.optional_value()) {
            if (attached && !option.optional_value())
                throw Error(arg.option + " takes no value, got '" + word + "'");
            if (attached && arg.text.empty())
                throw Error(arg.option + " expects a value after '=', got '" + word + "'");
            given.push_back({row, arg});
        } else if (attached) {
            given.push_back({row, arg});
        } else {
            if (i + 1 >= args.size()) throw Error(arg.option + " needs a value" + see);
            given.push_back({row, {arg.option, args[++i]}});
        }
    }
    return given;
}

std::string help_text(const CommandInfo& command) {
    constexpr std::size_t column = 25;  // where the help of an option starts
    std::string text = command.intro;
    for (const OptionInfo& option : command.options) {
        if (option.name.empty()) {
            text += "\n" + (option.help.empty() ? "" : option.help + "\n");
            continue;
        }
        std::string left =
            std::string("  ") +
            (option.short_name ? std::string("-") + option.short_name + ", " : "    ") +
            option.name + (option.value.empty() || option.optional_value() ? "" : " ") +
            option.value;
        left += left.size() + 2 <= column ? std::string(column - left.size(), ' ')
                                          : "\n" + std::string(column, ' ');
        std::size_t start = 0;
        while (start < option.help.size()) {
            const std::size_t end = std::min(option.help.find('\n', start), option.help.size());
            text += (start == 0 ? left : std::string(column, ' ')) +
                    option.help.substr(start, end - start) + "\n";
            start = end + 1;
        }
    }
    return text + (command.epilogue.empty() ? "" : "\n" + command.epilogue);
}

namespace {

template <typename Enum>
Enum parse_choice(const Arg& arg, const std::map<std::string, Enum>& choices) {
    const auto found = choices.find(arg.text);
    if (found != choices.end()) return found->second;
    std::string names;
    std::vector<std::string> known;
    for (const auto& choice : choices) known.push_back(choice.first);
    for (const auto& choice : choices) names += (names.empty() ? "" : ", ") + choice.first;
    throw Error(arg.option + " expects one of " + names + ", got '" + arg.text + "'" +
                did_you_mean(arg.text, known));
}

// The largest size any one dimension may have; products are checked later.
constexpr std::uint64_t max_size = std::uint64_t(1) << 32;

std::size_t parse_size(const Arg& arg) { return parse_count(arg, max_size); }

// A head number: 0, 1, ... (checked against h once h is known).
std::size_t parse_index(const Arg& arg) {
    const std::uint64_t value = parse_unsigned(arg);
    if (value >= max_size) throw Error(arg.option + " value '" + arg.text + "' is too large");
    return std::size_t(value);
}

// "-1,-1,0,0,1": a draft tree's parent indices, -1 or a whole number each, at most 256
// (core/forms/draft.h checks that each points back).
std::vector<std::ptrdiff_t> parse_parent_list(const Arg& arg) {
    constexpr std::size_t most = 256;
    std::vector<std::ptrdiff_t> parents;
    for (const std::string& item : split(arg.text, ',')) {
        const bool negative = !item.empty() && item[0] == '-';
        const std::size_t value = parse_index({arg.option, item.substr(negative ? 1 : 0)});
        parents.push_back(negative ? -std::ptrdiff_t(value) : std::ptrdiff_t(value));
        if (parents.size() > most) {
            throw Error(arg.option + " takes at most " + std::to_string(most) + " values");
        }
    }
    return parents;
}

// Each form flag asks for its form; a rule (config.cpp) allows one.
void ask_form(Config& c, FormChoice form) {
    if (std::find(c.forms.begin(), c.forms.end(), form) == c.forms.end()) c.forms.push_back(form);
}

const std::map<std::string, FormChoice> form_names = {
    {"packed", FormChoice::Packed},    {"fused-qkv", FormChoice::FusedQkv},
    {"per-head", FormChoice::PerHead}, {"decode", FormChoice::Decode},
    {"block", FormChoice::Block},      {"mla", FormChoice::Mla}};

// mha's options in --help order. To add an option: one row here (long name, short
// letter or 0, value placeholder or "" for a flag, help lines of at most 55 columns,
// what it sets in Config; an option of steps 7-9 sets a field of ScoreOptions, which
// config.h tells how to add), one line in docs/mha.1 and docs/mha.bash (test_cli checks
// both against this table), a row in docs/errors.md, and, if it conflicts with other
// options, one rule in the rule table of config.cpp.
using Row = Option<Config>;
const std::vector<Row>& mha_table() {
    static const std::vector<Row> table = {
        section<Config>("Sizes (with --input/--weights, B, N, M and d_model come from the files):"),
        {{"--batch", 'b', "B", "batch size (default 2)"},
         [](Config& c, const Arg& a) { c.batch = parse_size(a); }},
        {{"--seq-len", 'n', "N", "query sequence length (default 8)"},
         [](Config& c, const Arg& a) { c.seq_len = parse_size(a); }},
        {{"--kv-len", 'm', "M", "key/value length (default N); M != N is cross-attention"},
         [](Config& c, const Arg& a) { c.kv_len = parse_size(a); }},
        {{"--d-model", 'd', "D", "model width (default 256); must be divisible by --heads"},
         [](Config& c, const Arg& a) { c.d_model = parse_size(a); }},
        {{"--heads", 'H', "H",
          "number of heads (default 4); d_k = d_model / h; needed\n"
          "with --weights unless the .npz saves num_heads"},
         [](Config& c, const Arg& a) { c.heads = parse_size(a); }},
        {{"--kv-heads", 'G', "G",
          "key/value heads shared by the h query heads (default\n"
          "h); G must divide h; 1 = multi-query attention"},
         [](Config& c, const Arg& a) { c.kv_heads = parse_size(a); }},
        {{"--head-dim", 0, "D",
          "width d_k of each head (default d_model / h); W_q is\n"
          "(h*D, d_model), W_o (d_model, h*D) (Gemma 2)"},
         [](Config& c, const Arg& a) { c.head_dim = parse_size(a); }},

        section<Config>("Computation:"),
        {{"--causal", 0, "[=bottom-right|top-left]",
          "block future keys; bottom-right (default): query i\n"
          "sees keys j <= i + M - N, as a KV cache needs;\n"
          "top-left: j <= i, as SDPA's is_causal=True"},
         [](Config& c, const Arg& a) {
             c.causal = true;
             if (a.text.empty()) return;  // bare --causal stays bottom-right
             c.causal_align = parse_choice<CausalAlign>(
                 a,
                 {{"bottom-right", CausalAlign::BottomRight}, {"top-left", CausalAlign::TopLeft}});
         }},
        {{"--add-zero-attn", 0, "",
          "append a zero key and value after the projections,\n"
          "as nn.MultiheadAttention(add_zero_attn=True) does"},
         [](Config& c, const Arg&) { c.add_zero_attn = true; }},
        {{"--no-bias", 0, "", "seeded projections without bias"},
         [](Config& c, const Arg&) { c.bias = false; }},
        {{"--random-bias", 0, "", "seeded biases drawn like nn.Linear's instead of zeros"},
         [](Config& c, const Arg&) { c.random_bias = true; }},
        {{"--seed", 0, "S", "seed for weights and inputs (default 0)"},
         [](Config& c, const Arg& a) { c.seed = parse_unsigned(a); }},
        {{"--threads", 't', "T",
          "worker threads (default: the hardware's, at most B*h,\n"
          "and fewer for small sizes: 8M multiply-adds each)"},
         [](Config& c, const Arg& a) { c.threads = parse_count(a, max_threads); }},
        {{"--masked-rows", 0, "nan|zero",
          "a query whose keys are all blocked: NaN weights like\n"
          "PyTorch (default, with a warning) or zeros"},
         [](Config& c, const Arg& a) {
             c.zero_masked_rows = parse_choice<bool>(a, {{"nan", false}, {"zero", true}});
         }},
        {{"--attention", 0, "auto|standard|streaming",
          "steps 6-10: standard stores the (B, h, N, M) weights;\n"
          "streaming never does (online softmax, one step in\n"
          "the trace); auto (default): standard for --decode,\n"
          "when a view needs them, or when --save, a trace or\n"
          "--format shows them and they fit --max-memory,\n"
          "otherwise streaming"},
         [](Config& c, const Arg& a) {
             c.attention = parse_choice<std::optional<AttentionPath>>(
                 a, {{"auto", std::nullopt},
                     {"standard", AttentionPath::Standard},
                     {"streaming", AttentionPath::Streaming}});
         }},
        {{"--flash-row", 0, "I",
          "with --attention streaming: trace query row I of\n"
          "batch 0, head 0 tile by tile (running max, running\n"
          "sum, rescale) and compare it with the standard row"},
         [](Config& c, const Arg& a) {
             c.flash_row = parse_index(a);
             c.trace = true;
         }},
        {{"--max-memory", 0, "SIZE", "refuse runs and files needing more memory (default 2G)"},
         [](Config& c, const Arg& a) { c.max_memory = parse_bytes(a); }},
        {{"--max-time", 0, "SECONDS|off",
          "refuse runs estimated (from their multiply-adds) to\n"
          "take longer (default 60); off: no limit"},
         [](Config& c, const Arg& a) { c.max_time = parse_seconds_or_off(a); }},

        section<Config>("Output:"),
        {{"--trace", 0, "", "print every step: shape, strides, copies, multiply-adds"},
         [](Config& c, const Arg&) { c.trace = true; }},
        {{"--values", 0, "", "also print each tensor's values (implies --trace)"},
         [](Config& c, const Arg&) { c.values = c.trace = true; }},
        {{"--step", 0, "",
          "the trace, pausing after each step when stdin is a\n"
          "terminal: one key, Enter or space next, b back, q quit"},
         [](Config& c, const Arg&) { c.step = c.trace = true; }},
        {{"--format", 0, "text|json|markdown|html",
          "text (default), one JSON document with every step,\n"
          "a Markdown table of the steps for course notes, or\n"
          "a lesson page: one self-contained HTML file (--output;\n"
          "with --model or --checkpoint: the heads and the prediction)"},
         [](Config& c, const Arg& a) {
             c.format = parse_choice<Format>(a, {{"text", Format::Text},
                                                 {"json", Format::Json},
                                                 {"markdown", Format::Markdown},
                                                 {"html", Format::Html}});
         }},
        {{"--output", 0, "FILE", "where --format html writes its page"},
         [](Config& c, const Arg& a) { c.output_path = parse_path(a); }},
        {{"--explain", 0, "",
          "a paragraph per step on what it does and why, in\n"
          "--trace, --step, --format markdown and html"},
         [](Config& c, const Arg&) { c.explain = true; }},
        {{"--save", 0, "OUT.npz",
          "write output (B, N, d_model), attn_weights (B, h, N, M),\n"
          "in the inputs' layout (--seq-first: output (N, B,\n"
          "d_model); unbatched: (N, d_model) and (h, N, M));\n"
          "--attention streaming leaves out attn_weights; with\n"
          "--backward also grad.input (grad.key, grad.value) in\n"
          "the inputs' layout and grad.NAME for every weight,\n"
          "named as --weights names it (prefix included) or,\n"
          "seeded, as nn.MultiheadAttention's state dict\n"
          "(--block: nn.TransformerEncoderLayer's; --form mla:\n"
          "as DeepSeek-V2's, q_proj.weight ...)"},
         [](Config& c, const Arg& a) { c.save_path = parse_path(a); }},

        section<Config>("The backward pass:"),
        {{"--backward", 0, "",
          "after the forward, the gradients of L = sum(output *\n"
          "dO) for the input(s) and every weight, traced in\n"
          "reverse (packed, --fused-qkv, --per-head, --form mla\n"
          "and --block; --decode's are --causal's without it);\n"
          "--model: L = the mean cross-entropy of predicting\n"
          "each next character of --text (printed as loss:); one\n"
          "layer's header says what the forward kept for it, the\n"
          "totals its multiply-adds against the forward's; with\n"
          "--shapes-only the memory training the layer keeps"},
         [](Config& c, const Arg&) { c.backward = true; }},
        {{"--grad-output", 0, "DO.npy",
          "dO in the layout --save writes output in (default:\n"
          "standard normal from --seed); implies --backward"},
         [](Config& c, const Arg& a) {
             c.grad_output_path = parse_path(a);
             c.backward = true;
         }},
        {{"--gradcheck", 0, "",
          "in double: every gradient of L = sum(output * dO)\n"
          "(dO standard normal from --seed) against central\n"
          "differences; a table, exit 0 when all are within 1e-7,\n"
          "else 1; --explain adds why the softmax backward needs\n"
          "no (M, M) Jacobian"},
         [](Config& c, const Arg&) { c.gradcheck = true; }},

        section<Config>("PyTorch interop (.npy/.npz as numpy.save/numpy.savez write them):"),
        {{"--weights", 0, "W.npz",
          "a state dict: nn.MultiheadAttention's, W_q/W_k/W_v/W_o\n"
          "(.weight, .bias; or w_q...), W_qkv + W_o, q_proj...\n"
          "o_proj, GPT-2's c_attn + c_proj (read transposed),\n"
          "or timm's ViT qkv + proj"},
         [](Config& c, const Arg& a) { c.weights_path = parse_path(a); }},
        {{"--weights-prefix", 0, "P",
          "read only the arrays named P... (P removed), e.g.\n"
          "attn. or layers.0.self_attn.; the others are ignored"},
         [](Config& c, const Arg& a) {
             if (a.text.empty())
                 throw Error(a.option + " expects a prefix such as attn., got an empty string");
             c.weights_prefix = a.text;
         }},
        {{"--input", 0, "X.npy", "queries (B, N, d_model); also keys and values unless"},
         [](Config& c, const Arg& a) { c.input_path = parse_path(a); }},
        {{"--key", 0, "K.npy", "keys (B, M, kdim) and"},
         [](Config& c, const Arg& a) { c.key_path = parse_path(a); }},
        {{"--value", 0, "V.npy",
          "values (B, M, vdim) are given; 2-D files (N, d_model)\n"
          "are unbatched inputs, read as B = 1"},
         [](Config& c, const Arg& a) { c.value_path = parse_path(a); }},
        {{"--seq-first", 0, "",
          "the input files are (N, B, d_model), as PyTorch's\n"
          "default batch_first=False takes them"},
         [](Config& c, const Arg&) { c.seq_first = true; }},
        {{"--mask", 0, "M.npy",
          "attn_mask (N, M), (B, N, M) or (B*h, N, M), or 4-D\n"
          "(1|B, 1|h, N, M); bool/int masks block where True,\n"
          "float masks are added"},
         [](Config& c, const Arg& a) { c.mask_path = parse_path(a); }},
        {{"--mask-means", 0, "block|keep",
          "block (default, PyTorch): True/non-zero = blocked\n"
          "keep: 0 = blocked (masked_fill(mask == 0, -inf))"},
         [](Config& c, const Arg& a) {
             c.mask_means = parse_choice<MaskMeaning>(
                 a, {{"block", MaskMeaning::Block}, {"keep", MaskMeaning::Keep}});
         }},
        {{"--key-padding-mask", 0, "P.npy",
          "(B, M), or (M) unbatched: bool/int masks ignore a\n"
          "key where True/non-zero, float masks are added"},
         [](Config& c, const Arg& a) { c.key_padding_mask_path = parse_path(a); }},

        section<Config>("Seeing attention (docs/heatmaps.md, docs/demo_heads.md):"),
        {{"--text", 0, "\"SENTENCE\"",
          "attend over its tokens: seeded word embeddings plus\n"
          "sinusoidal positions; B=1, N=tokens, d_model 256\n"
          "unless -d or --weights gives it; with --checkpoint,\n"
          "the tokens of the folder's own tokenizer"},
         [](Config& c, const Arg& a) { c.text = a.text; }},
        {{"--text-file", 0, "FILE",
          "--text read from a file, for texts longer than a\n"
          "command line (at most 16 MiB)"},
         [](Config& c, const Arg& a) { c.text_file = parse_path(a); }},
        {{"--no-special", 0, "",
          "--checkpoint --text: leave out the special tokens\n"
          "the tokenizer's post-processor adds (a BOS)"},
         [](Config& c, const Arg&) { c.no_special = true; }},
        {{"--demo-heads", 0, "",
          "constructed heads (previous token, first token, same\n"
          "token, even); needs --text, -H 4, d_model >= 256;\n"
          "turns on --causal"},
         [](Config& c, const Arg&) { c.demo_heads = true; }},
        {{"--heatmap", 0, "",
          "draw each head's weights (keys the mask hides: //),\n"
          "after the --summary numbers, so the picture ends it"},
         [](Config& c, const Arg&) { c.heatmap = true; }},
        {{"--summary", 0, "",
          "score variance before/after the scale, per-head\n"
          "entropy and the key each query attends to most"},
         [](Config& c, const Arg&) { c.summary = true; }},
        {{"--head", 0, "I|mean",
          "draw head I (repeatable) or the mean over heads;\n"
          "--model without --layer: head I of every layer"},
         [](Config& c, const Arg& a) {
             if (a.text == "mean")
                 c.mean_view = true;
             else
                 c.view_heads.push_back(parse_index(a));
         }},
        {{"--color", 0, "auto|always|never|256|truecolor",
          "colour the heatmap (auto: a terminal, TERM not dumb,\n"
          "NO_COLOR unset; true colour when COLORTERM is truecolor\n"
          "or 24bit); 256 or truecolor: always, at that depth"},
         [](Config& c, const Arg& a) {
             c.color = parse_choice<ColorChoice>(a, {{"auto", ColorChoice::Auto},
                                                     {"always", ColorChoice::Always},
                                                     {"never", ColorChoice::Never},
                                                     {"256", ColorChoice::Force256},
                                                     {"truecolor", ColorChoice::ForceTrueColour}});
         }},
        {{"--scale", 0, "fixed|auto",
          "the colour scale of heatmaps, SVG and HTML: fixed\n"
          "(default) 0 to 1, or auto: each map its own min..max"},
         [](Config& c, const Arg& a) {
             c.auto_scale = parse_choice<bool>(a, {{"fixed", false}, {"auto", true}});
         }},
        {{"--export-svg", 0, "FILE", "the heatmaps as a standalone SVG (FILE.svg)"},
         [](Config& c, const Arg& a) { c.svg_path = parse_svg_path(a); }},
        {{"--ablate-head", 0, "I", "zero head I before W_o; report how much output changes"},
         [](Config& c, const Arg& a) { c.ablate_head = parse_index(a); }},
        {{"--no-scale", 0, "", "skip the 1/sqrt(d_k) scale and show what that does"},
         [](Config& c, const Arg&) { c.no_scale = true; }},
        {{"--head-contributions", 0, "",
          "the output split by head before W_o mixes them: head\n"
          "i's slice of concat times W_o's columns for it"},
         [](Config& c, const Arg&) { c.head_contributions = true; }},
        {{"--compare", 0, "H1,H2,...",
          "the same layer at each head count, side by side:\n"
          "parameters, multiply-adds, output norm, entropy"},
         [](Config& c, const Arg& a) { c.compare_heads = parse_count_list(a, max_size); }},

        section<Config>("A trained model (examples/models/README.md, docs/induction.md):"),
        {{"--model", 0, "FILE",
          "a character model: --text through its embeddings and\n"
          "every layer; prints its next-character prediction"},
         [](Config& c, const Arg& a) { c.model_path = parse_path(a); }},
        {{"--checkpoint", 0, "DIR",
          "a Hugging Face model folder (config.json and\n"
          "safetensors; gpt2, llama, mistral, qwen2, qwen3,\n"
          "gemma2, gemma3): --tokens, or --text through its\n"
          "tokenizer, through every layer, the top-5 next tokens\n"
          "(docs/checkpoints.md)"},
         [](Config& c, const Arg& a) { c.checkpoint_path = parse_path(a); }},
        {{"--tokens", 0, "ID,ID,...",
          "--checkpoint's input as token ids (0-based)"},
         [](Config& c, const Arg& a) { c.tokens = parse_index_list(a, max_size, 1 << 20); }},
        {{"--config", 0, "FILE",
          "a config.json alone, with --shapes-only: that model's\n"
          "real sizes, parameters and KV cache per layer (with\n"
          "--backward the activations training keeps, with\n"
          "--decode T the KV cache ledger at T)"},
         [](Config& c, const Arg& a) { c.config_path = parse_path(a); }},
        {{"--layer", 0, "L",
          "the layer the trace, heatmap, summary, SVG and --save\n"
          "show (default 0); --heatmap and --export-svg without\n"
          "--layer draw every layer's heads at once; with\n"
          "--preset gemma2-*: layer L, local (window) if L is even"},
         [](Config& c, const Arg& a) { c.layer = parse_index(a); }},

        section<Config>("Variants (docs/variants.md):"),
        {{"--form", 0, "packed|fused-qkv|per-head|decode|block|mla",
          "the form of the pass (default packed); the four\n"
          "options below choose it too. decode: N tokens one at\n"
          "a time; block: --block pre; mla: DeepSeek-V2's latent\n"
          "attention, its naive form through the shared steps\n"
          "and the absorbed form as a cross-check"},
         [](Config& c, const Arg& a) { ask_form(c, parse_choice<FormChoice>(a, form_names)); }},
        {{"--decode", 0, "T",
          "decode T tokens one at a time with a KV cache (N = T,\n"
          "causal); the last row equals the full causal pass;\n"
          "--form mla: a cache of the latent and the RoPE key;\n"
          "--shapes-only with --preset P or --config FILE: the\n"
          "model's KV cache ledger at T, layer by layer (local\n"
          "layers, MLA's latent) in float32, int8 and int4, paged\n"
          "with --kv-block-size, and the sequences --max-memory\n"
          "holds"},
         [](Config& c, const Arg& a) {
             c.decode = parse_size(a);
             ask_form(c, FormChoice::Decode);
         }},
        {{"--prefill-chunks", 0, "C1,C2,...",
          "chunked prefill: the N tokens in chunks of these\n"
          "sizes (summing to N) against a growing KV cache, each\n"
          "chunk's queries seeing the prefix and, causally, their\n"
          "own chunk; equals the causal pass to the bit"},
         [](Config& c, const Arg& a) {
             c.prefill_chunks = parse_count_list(a, max_size);
             ask_form(c, FormChoice::Decode);
         }},
        {{"--draft", 0, "K",
          "with --decode T: verify the last K tokens as a draft,\n"
          "in one pass of K queries against the cache, causal\n"
          "over the draft; equals decoding them to the bit"},
         [](Config& c, const Arg& a) { c.draft = parse_size(a); }},
        {{"--draft-tree", 0, "P0,P1,...",
          "with --decode T: the last K tokens are a draft tree,\n"
          "token i's parent Pi (-1: the last cached token); token\n"
          "i sees the prefix, its ancestors and itself"},
         [](Config& c, const Arg& a) { c.draft_tree = parse_parent_list(a); }},
        {{"--draft-layers", 0, "L",
          "with --model or --checkpoint and --draft K: the\n"
          "model's first L layers draft K tokens greedily; shows\n"
          "how many the whole model accepts"},
         [](Config& c, const Arg& a) { c.draft_layers = parse_size(a); }},
        {{"--kv-block-size", 0, "S",
          "page the KV cache of --decode (MLA's latent too) or\n"
          "--prefill-chunks: a pool of blocks of S positions and\n"
          "a block table per sequence (docs/decode.md); the same\n"
          "bits as unpaged"},
         [](Config& c, const Arg& a) { c.kv_block_size = parse_size(a); }},
        {{"--kv-pool-seed", 0, "N",
          "shuffle the order of --kv-block-size's blocks in the\n"
          "pool (a seeded permutation) to show the indirection"},
         [](Config& c, const Arg& a) { c.kv_pool_seed = parse_unsigned(a); }},
        {{"--kv-quant", 0, "int8|int4",
          "--decode: quantise the KV cache to 8 or 4 bits per\n"
          "value, min-max per group (KIVI), the pass reading it\n"
          "dequantised; the trace shows scales, zero points and\n"
          "the error against the float cache (docs/decode.md)"},
         [](Config& c, const Arg& a) {
             c.kv_quant = parse_choice<unsigned>(a, {{"int8", 8u}, {"int4", 4u}});
         }},
        {{"--kv-quant-group", 0, "N",
          "values sharing one scale and zero point (default 32,\n"
          "or the axis's length if shorter); along d_k it must\n"
          "divide d_k"},
         [](Config& c, const Arg& a) { c.kv_quant_group = parse_size(a); }},
        {{"--kv-quant-axis", 0, "token|channel|kivi",
          "groups along d_k within a token, along the tokens\n"
          "within a channel (a last partial group stays float),\n"
          "or kivi (default): K per channel, V per token"},
         [](Config& c, const Arg& a) {
             c.kv_quant_axis = parse_choice<KvQuantAxisChoice>(
                 a, {{"token", KvQuantAxisChoice::Token},
                     {"channel", KvQuantAxisChoice::Channel},
                     {"kivi", KvQuantAxisChoice::Kivi}});
         }},
        {{"--kv-residual", 0, "R", "--kv-quant: the last R cached tokens stay float"},
         [](Config& c, const Arg& a) { c.kv_residual = parse_index(a); }},
        {{"--fused-qkv", 0, "", "one (3*d_model, d_model) projection, view and permute"},
         [](Config& c, const Arg&) { ask_form(c, FormChoice::FusedQkv); }},
        {{"--per-head", 0, "",
          "each head with its own slices of W_q, W_k, W_v, then\n"
          "the concatenation (the papers' formula)"},
         [](Config& c, const Arg&) { ask_form(c, FormChoice::PerHead); }},
        {{"--block", 0, "pre|post",
          "the transformer block around attention: residuals,\n"
          "LayerNorm (before or after), feed-forward with GELU"},
         [](Config& c, const Arg& a) {
             c.block =
                 parse_choice<BlockKind>(a, {{"pre", BlockKind::Pre}, {"post", BlockKind::Post}});
             ask_form(c, FormChoice::Block);
         }},
        {{"--d-ff", 0, "F", "the block's feed-forward width (default 4*d_model)"},
         [](Config& c, const Arg& a) { c.d_ff = parse_size(a); }},

        section<Config>("Modern attention (docs/variants.md; query i is at position i + M - N):"),
        {{"--rope", 0, "half|interleaved",
          "rotary embeddings on each head's Q and K after step 5:\n"
          "pairs (x[i], x[i+d_k/2]) (Hugging Face) or (x[2i],\n"
          "x[2i+1]) (Meta); d_k must be even"},
         [](Config& c, const Arg& a) {
             c.rope = parse_choice<RopeLayout>(
                 a, {{"half", RopeLayout::Half}, {"interleaved", RopeLayout::Interleaved}});
         }},
        {{"--rope-theta", 0, "T", "RoPE's base: inv_freq[i] = T^(-2i/d_k) (default 10000)"},
         [](Config& c, const Arg& a) { c.rope_theta = parse_positive(a); }},
        {{"--alibi", 0, "", "step 8 adds -m_i*|p - j| with Press et al.'s slopes"},
         [](Config& c, const Arg&) { c.scores.alibi = true; }},
        {{"--window", 0, "W", "sliding window (causal): query p sees keys p-W < j <= p"},
         [](Config& c, const Arg& a) { c.scores.window = parse_size(a); }},
        {{"--sink-tokens", 0, "S", "with --window: the first S keys stay visible (sinks)"},
         [](Config& c, const Arg& a) { c.scores.sinks = parse_index(a); }},
        {{"--softcap", 0, "C", "step 7 ends with C*tanh(scores/C) (Gemma 2); C > 0"},
         [](Config& c, const Arg& a) { c.scores.softcap = parse_positive(a); }},
        {{"--scale-base", 0, "S",
          "step 7 divides by sqrt(S), not sqrt(d_k) (Gemma 2's\n"
          "query_pre_attn_scalar); S > 0"},
         [](Config& c, const Arg& a) { c.scores.scale_base = parse_positive(a); }},
        {{"--qk-norm", 0, "",
          "RMSNorm of each head's Q and K before the scores, with\n"
          "q_norm.weight, k_norm.weight (d_k) or ones when seeded"},
         [](Config& c, const Arg&) { c.qk_norm = true; }},
        {{"--gate", 0, "elementwise|headwise",
          "gated attention (Qwen3-Next): concat * sigmoid(x_q @ W_g.T\n"
          "+ b_g) before W_o, one gate per column or per head;\n"
          "attn_gate.weight, or a gated Qwen q_proj with --heads"},
         [](Config& c, const Arg& a) {
             c.gate = parse_choice<bool>(a, {{"elementwise", false}, {"headwise", true}});
         }},

        {{"--latent-dim", 0, "C",
          "--form mla: the KV latent's width d_c (default\n"
          "4*d_model/h)"},
         [](Config& c, const Arg& a) { c.latent_dim = parse_size(a); }},
        {{"--rope-dim", 0, "R",
          "--form mla: the decoupled RoPE key's width d_R, even\n"
          "(default d_model/h/2, rounded down to even)"},
         [](Config& c, const Arg& a) { c.rope_dim = parse_size(a); }},

        section<Config>("Model sizes:"),
        {{"--preset", 0, "NAME",
          "sizes of a known model (B=1, N = its context); see\n"
          "--list-presets; options given too take precedence"},
         [](Config& c, const Arg& a) { c.preset = find_preset(a.text).name; }},
        {{"--shapes-only", 0, "",
          "trace shapes, parameters, multiply-adds and memory\n"
          "without computing or allocating any tensor"},
         [](Config& c, const Arg&) { c.shapes_only = c.trace = true; }},
        {{"--list-presets", 0, "", "the presets with their numbers (sources in docs/)"},
         [](Config& c, const Arg&) { c.list_presets = true; }},

        section<Config>(""),
        {{"--help", 'h', "", "this help"}, [](Config& c, const Arg&) { c.help = true; }},
        {{"--version", 'V', "", "the version"}, [](Config& c, const Arg&) { c.version = true; }},
    };
    return table;
}

CommandInfo with_subcommands(CommandInfo command) {
    command.subcommands = {"bench", "grade", "quiz", "tokenize", "train"};
    return command;
}

}  // namespace

const CommandInfo& mha_command() {
    static const CommandInfo command = with_subcommands(command_info<Config>("",
                                                                             R"(Usage: mha [options]
       mha quiz [options]    questions on shapes and costs, graded
       mha grade ANSWERS < KEY   grade an answers file against trace facts
       mha bench [options]   time the forward pass (see mha bench --help)
       mha train [options]   train a character model, watch its heads form
       mha tokenize --checkpoint DIR --text T   a real tokenizer, token by token
Multi-head attention, step by step: computes the forward pass of
nn.MultiheadAttention and shows every tensor on the way (--trace).
With no options it runs the classic example: B=2, N=8, d_model=256, h=4.
)",
                                                                             R"(Examples:
  mha --trace                         every step of the classic example
  mha --step -b 1 -n 4 -H 2 --causal  one step at a time, with a mask
  mha --compare 1,8,16 -d 512         one layer at 1, 8 and 16 heads
  mha --preset gpt2 --shapes-only     a real model's shapes and costs
  mha --text "the cat sat" --demo-heads --heatmap
                                      four constructed heads on a sentence
  mha --weights w.npz --input x.npy --save out.npz
                                      PyTorch's numbers (README: interop)
  mha quiz                            five questions, graded
  mha bench --quick                   time the forward pass

Classroom: mha quiz [options] asks shape and cost questions and grades
answers (see mha quiz --help); mha grade ANSWERS < KEY grades an answers
file against a key of trace facts (see mha grade --help).

Errors print one line, "mha: error: ...", and exit with status 2.
)",
                                                                             "", mha_table()));
    return command;
}

Config parse_args(const std::vector<std::string>& args) {
    Config config;
    const std::vector<std::string> given = apply_options(mha_command(), mha_table(), args, config);
    if (!config.preset.empty()) apply_preset(find_preset(config.preset), given, config);
    settle(config);
    return config;
}

std::string help_text() { return help_text(mha_command()); }

}  // namespace mha
