// GNU-style parsing: --name value, --name=value, -x value, -xvalue.

#include "app/cli.h"

#include <cctype>
#include <functional>
#include <limits>
#include <map>

#include "app/presets.h"
#include "app/variants.h"
#include "core/error.h"

namespace mha {

const char* const version_text = "mha 0.1.0";

std::uint64_t parse_unsigned(const std::string& option, const std::string& text) {
    const std::string expected = option + " expects a whole number, got '" + text + "'";
    if (text.empty() || text.size() > 20) throw Error(expected);
    std::uint64_t value = 0;
    for (char c : text) {
        if (!std::isdigit(static_cast<unsigned char>(c))) throw Error(expected);
        const std::uint64_t digit = std::uint64_t(c - '0');
        if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) {
            throw Error(option + " value '" + text + "' is too large");
        }
        value = value * 10 + digit;
    }
    return value;
}

std::size_t parse_count(const std::string& option, const std::string& text, std::uint64_t max) {
    const std::uint64_t value = parse_unsigned(option, text);
    if (value == 0) throw Error(option + " must be at least 1, got 0");
    if (value > max) {
        throw Error(option + " must be at most " + std::to_string(max) + ", got " + text);
    }
    return std::size_t(value);
}

namespace {

// "512M", "2G", "1048576": bytes, with an optional binary suffix K, M, G or T (KiB ... TiB).
std::uint64_t parse_bytes(const std::string& option, const std::string& text) {
    std::string digits = text;
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
    const std::string expected = option + " expects a size like 512M or 2G, got '" + text + "'";
    std::uint64_t value = 0;
    try {
        value = parse_unsigned(option, digits);
    } catch (const Error&) {
        throw Error(expected);
    }
    if (value == 0) throw Error(option + " must be more than 0, got '" + text + "'");
    if (value > std::numeric_limits<std::uint64_t>::max() / unit)
        throw Error(option + " value '" + text + "' is too large");
    return value * unit;
}

template <typename Enum>
Enum parse_choice(const std::string& option, const std::string& text,
                  const std::map<std::string, Enum>& choices) {
    const auto found = choices.find(text);
    if (found != choices.end()) return found->second;
    std::string names;
    for (const auto& choice : choices) names += (names.empty() ? "" : ", ") + choice.first;
    throw Error(option + " expects one of " + names + ", got '" + text + "'");
}

std::string parse_path(const std::string& option, const std::string& text) {
    if (text.empty()) throw Error(option + " expects a file name, got an empty string");
    return text;
}

// The largest size any one dimension may have; products are checked later.
constexpr std::uint64_t max_size = std::uint64_t(1) << 32;

// A head number: 0, 1, ... (checked against h once h is known).
std::size_t parse_index(const std::string& option, const std::string& text) {
    const std::uint64_t value = parse_unsigned(option, text);
    if (value >= max_size) throw Error(option + " value '" + text + "' is too large");
    return std::size_t(value);
}

struct Option {
    std::string name;  // "--batch"
    char short_name;   // 'b', or 0
    bool takes_value;
    std::function<void(Config&, const std::string&)> apply;
};

const std::vector<Option>& options() {
    static const std::vector<Option> table = {
        {"--batch", 'b', true,
         [](Config& c, const std::string& v) { c.batch = parse_count("--batch", v, max_size); }},
        {"--seq-len", 'n', true,
         [](Config& c, const std::string& v) {
             c.seq_len = parse_count("--seq-len", v, max_size);
         }},
        {"--kv-len", 'm', true,
         [](Config& c, const std::string& v) { c.kv_len = parse_count("--kv-len", v, max_size); }},
        {"--d-model", 'd', true,
         [](Config& c, const std::string& v) {
             c.d_model = parse_count("--d-model", v, max_size);
         }},
        {"--heads", 'H', true,
         [](Config& c, const std::string& v) { c.heads = parse_count("--heads", v, max_size); }},
        {"--kv-heads", 'G', true,
         [](Config& c, const std::string& v) {
             c.kv_heads = parse_count("--kv-heads", v, max_size);
         }},
        {"--seed", 0, true,
         [](Config& c, const std::string& v) { c.seed = parse_unsigned("--seed", v); }},
        {"--threads", 't', true,
         [](Config& c, const std::string& v) {
             c.threads = parse_count("--threads", v, max_threads);
         }},
        {"--causal", 0, false, [](Config& c, const std::string&) { c.causal = true; }},
        {"--no-bias", 0, false, [](Config& c, const std::string&) { c.bias = false; }},
        {"--random-bias", 0, false, [](Config& c, const std::string&) { c.random_bias = true; }},
        {"--trace", 0, false, [](Config& c, const std::string&) { c.trace = true; }},
        {"--values", 0, false, [](Config& c, const std::string&) { c.values = c.trace = true; }},
        {"--step", 0, false, [](Config& c, const std::string&) { c.step = c.trace = true; }},
        {"--format", 0, true,
         [](Config& c, const std::string& v) {
             c.format = parse_choice<Format>("--format", v,
                                             {{"text", Format::Text},
                                              {"json", Format::Json},
                                              {"markdown", Format::Markdown}});
         }},
        {"--weights", 0, true,
         [](Config& c, const std::string& v) { c.weights_path = parse_path("--weights", v); }},
        {"--input", 0, true,
         [](Config& c, const std::string& v) { c.input_path = parse_path("--input", v); }},
        {"--key", 0, true,
         [](Config& c, const std::string& v) { c.key_path = parse_path("--key", v); }},
        {"--value", 0, true,
         [](Config& c, const std::string& v) { c.value_path = parse_path("--value", v); }},
        {"--mask", 0, true,
         [](Config& c, const std::string& v) { c.mask_path = parse_path("--mask", v); }},
        {"--mask-means", 0, true,
         [](Config& c, const std::string& v) {
             c.mask_means = parse_choice<MaskMeaning>(
                 "--mask-means", v, {{"block", MaskMeaning::Block}, {"keep", MaskMeaning::Keep}});
         }},
        {"--key-padding-mask", 0, true,
         [](Config& c, const std::string& v) {
             c.key_padding_mask_path = parse_path("--key-padding-mask", v);
         }},
        {"--masked-rows", 0, true,
         [](Config& c, const std::string& v) {
             c.zero_masked_rows =
                 parse_choice<bool>("--masked-rows", v, {{"nan", false}, {"zero", true}});
         }},
        {"--save", 0, true,
         [](Config& c, const std::string& v) { c.save_path = parse_path("--save", v); }},
        {"--attention", 0, true,
         [](Config& c, const std::string& v) {
             c.attention = parse_choice<std::optional<AttentionPath>>(
                 "--attention", v,
                 {{"auto", std::nullopt},
                  {"standard", AttentionPath::Standard},
                  {"streaming", AttentionPath::Streaming}});
         }},
        {"--max-memory", 0, true,
         [](Config& c, const std::string& v) { c.max_memory = parse_bytes("--max-memory", v); }},
        {"--text", 0, true, [](Config& c, const std::string& v) { c.text = v; }},
        {"--demo-heads", 0, false, [](Config& c, const std::string&) { c.demo_heads = true; }},
        {"--heatmap", 0, false, [](Config& c, const std::string&) { c.heatmap = true; }},
        {"--summary", 0, false, [](Config& c, const std::string&) { c.summary = true; }},
        {"--head", 0, true,
         [](Config& c, const std::string& v) {
             if (v == "mean") c.mean_view = true;
             else c.view_heads.push_back(parse_index("--head", v));
         }},
        {"--color", 0, true,
         [](Config& c, const std::string& v) {
             c.color = parse_choice<ColorChoice>(
                 "--color", v,
                 {{"auto", ColorChoice::Auto}, {"always", ColorChoice::Always},
                  {"never", ColorChoice::Never}});
         }},
        {"--export-svg", 0, true,
         [](Config& c, const std::string& v) { c.svg_path = parse_path("--export-svg", v); }},
        {"--ablate-head", 0, true,
         [](Config& c, const std::string& v) { c.ablate_head = parse_index("--ablate-head", v); }},
        {"--no-scale", 0, false, [](Config& c, const std::string&) { c.no_scale = true; }},
        {"--preset", 0, true, [](Config& c, const std::string& v) { c.preset = find_preset(v).name; }},
        {"--shapes-only", 0, false,
         [](Config& c, const std::string&) { c.shapes_only = c.trace = true; }},
        {"--list-presets", 0, false, [](Config& c, const std::string&) { c.list_presets = true; }},
        {"--decode", 0, true,
         [](Config& c, const std::string& v) { c.decode = parse_count("--decode", v, max_size); }},
        {"--fused-qkv", 0, false, [](Config& c, const std::string&) { c.fused_qkv = true; }},
        {"--per-head", 0, false, [](Config& c, const std::string&) { c.per_head = true; }},
        {"--block", 0, true,
         [](Config& c, const std::string& v) {
             c.block = parse_choice<BlockKind>("--block", v,
                                               {{"pre", BlockKind::Pre}, {"post", BlockKind::Post}});
         }},
        {"--d-ff", 0, true,
         [](Config& c, const std::string& v) { c.d_ff = parse_count("--d-ff", v, max_size); }},
        {"--help", 'h', false, [](Config& c, const std::string&) { c.help = true; }},
        {"--version", 'V', false, [](Config& c, const std::string&) { c.version = true; }},
    };
    return table;
}

const Option& find_long(const std::string& name) {
    for (const Option& option : options()) {
        if (option.name == name) return option;
    }
    throw Error("unknown option '" + name + "' (see mha --help)");
}

const Option& find_short(char name) {
    for (const Option& option : options()) {
        if (option.short_name != 0 && option.short_name == name) return option;
    }
    throw Error(std::string("unknown option '-") + name + "' (see mha --help)");
}

}  // namespace

Config parse_args(const std::vector<std::string>& args) {
    Config config;
    std::vector<std::string> given;  // the options that appeared, for --preset
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        const Option* option = nullptr;
        std::string value;
        bool has_value = false;
        if (arg.rfind("--", 0) == 0 && arg.size() > 2) {
            const std::size_t equals = arg.find('=');
            option = &find_long(arg.substr(0, equals));
            has_value = equals != std::string::npos;
            if (has_value) value = arg.substr(equals + 1);
            if (has_value && !option->takes_value)
                throw Error(option->name + " takes no value, got '" + arg + "'");
        } else if (arg.size() >= 2 && arg[0] == '-' && arg[1] != '-') {
            option = &find_short(arg[1]);
            has_value = arg.size() > 2;
            if (has_value) value = arg.substr(2);
            if (has_value && !option->takes_value)
                throw Error(option->name + " takes no value, got '" + arg + "'");
        } else {
            throw Error("unexpected argument '" + arg +
                        "'; options start with -- (see mha --help)");
        }
        if (option->takes_value && !has_value) {
            if (i + 1 >= args.size()) throw Error(option->name + " needs a value (see mha --help)");
            value = args[++i];
        }
        option->apply(config, value);
        given.push_back(option->name);
    }
    if (!config.preset.empty()) apply_preset(find_preset(config.preset), given, config);
    apply_variants(config);
    validate(config);
    return config;
}

std::string help_text() {
    return R"(Usage: mha [options]
       mha quiz [options]    questions on shapes and costs, graded
       mha grade ANSWERS < KEY   grade an answers file against trace facts
       mha bench [options]   time the forward pass (see mha bench --help)
Multi-head attention, step by step: computes the forward pass of
nn.MultiheadAttention and shows every tensor on the way (--trace).
With no options it runs the classic example: B=2, N=8, d_model=256, h=4.

Sizes (with --input/--weights, B, N, M and d_model come from the files):
  -b, --batch B          batch size (default 2)
  -n, --seq-len N        query sequence length (default 8)
  -m, --kv-len M         key/value length (default N); M != N is cross-attention
  -d, --d-model D        model width (default 256); must be divisible by --heads
  -H, --heads H          number of heads (default 4); d_k = d_model / h
  -G, --kv-heads G       key/value heads shared by the h query heads (default
                         h); G must divide h; 1 = multi-query attention

Computation:
      --causal           block future keys; query i sees keys j <= i + M - N
                         (bottom-right aligned, as a KV cache needs)
      --no-bias          seeded projections without bias
      --random-bias      seeded biases drawn like nn.Linear's instead of zeros
      --seed S           seed for weights and inputs (default 0)
  -t, --threads T        worker threads (default: the hardware's, at most B*h,
                         and fewer for small sizes: 8M multiply-adds each)
      --masked-rows nan|zero
                         a query whose keys are all blocked: NaN weights like
                         PyTorch (default, with a warning) or zeros
      --attention auto|standard|streaming
                         steps 6-10: standard stores the (B, h, N, M) weights;
                         streaming never does (online softmax, one step in
                         the trace); auto (default): standard when --save or
                         a view needs them, or a trace or --format shows them
                         and they fit --max-memory, otherwise streaming
      --max-memory SIZE  refuse runs and files needing more memory (default 2G)

Output:
      --trace            print every step: shape, strides, copies, multiply-adds
      --values           also print each tensor's values (implies --trace)
      --step             the trace, pausing after each step when stdin is a
                         terminal: Enter next, b back one step, q quit
      --format text|json|markdown
                         text (default), one JSON document with every step,
                         or a Markdown table of the steps for course notes
      --save OUT.npz     write output (B, N, d_model), attn_weights (B, h, N, M)

PyTorch interop (.npy/.npz as numpy.save/numpy.savez write them):
      --weights W.npz    a state dict: nn.MultiheadAttention's, W_q/W_k/W_v/W_o
                         (.weight, .bias; or w_q...), or W_qkv + W_o
      --input X.npy      queries (B, N, d_model); also keys and values unless
      --key K.npy        keys (B, M, kdim) and
      --value V.npy      values (B, M, vdim) are given
      --mask M.npy       attn_mask (N, M), (B, N, M) or (B*h, N, M); bool/int
                         masks block where True, float masks are added
      --mask-means block|keep
                         block (default, PyTorch): True/non-zero = blocked
                         keep: 0 = blocked (masked_fill(mask == 0, -inf))
      --key-padding-mask P.npy
                         (B, M): True/non-zero = ignore that key

Seeing attention (docs/heatmaps.md, docs/demo_heads.md):
      --text "SENTENCE"  attend over its tokens: seeded word embeddings plus
                         sinusoidal positions; B=1, N=tokens, d_model 256
                         unless -d or --weights gives it
      --demo-heads       constructed heads (previous token, first token, same
                         token, even); needs --text, -H 4, d_model >= 256;
                         turns on --causal
      --heatmap          draw each head's weights, then --summary
      --summary          score variance before/after the scale, per-head
                         entropy and the key each query attends to most
      --head I|mean      draw head I (repeatable) or the mean over heads
      --color auto|always|never
                         colour the heatmap (auto: a terminal without NO_COLOR)
      --export-svg FILE  the heatmaps as a standalone SVG
      --ablate-head I    zero head I before W_o; report how much output changes
      --no-scale         skip the 1/sqrt(d_k) scale and show what that does

Variants (docs/variants.md):
      --decode T         decode T tokens one at a time with a KV cache (N = T,
                         causal); the last row equals the full causal pass
      --fused-qkv        one (3*d_model, d_model) projection, view and permute
      --per-head         each head with its own slices of W_q, W_k, W_v, then
                         the concatenation (the papers' formula)
      --block pre|post   the transformer block around attention: residuals,
                         LayerNorm (before or after), feed-forward with GELU
      --d-ff F           the block's feed-forward width (default 4*d_model)

Model sizes:
      --preset NAME      sizes of a known model (B=1, N = its context); see
                         --list-presets; options given too take precedence
      --shapes-only      trace shapes, parameters, multiply-adds and memory
                         without computing or allocating any tensor
      --list-presets     the presets with their numbers (sources in docs/)

  -h, --help             this help
  -V, --version          the version

Classroom: mha quiz [options] asks shape and cost questions and grades
answers (see mha quiz --help); mha grade ANSWERS < KEY grades an answers
file against a key of trace facts (see mha grade --help).

Errors print one line, "mha: error: ...", and exit with status 2.
)";
}

}  // namespace mha
