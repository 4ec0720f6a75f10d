// GNU-style parsing: --name value, --name=value, -x value, -xvalue.

#include "app/cli.h"

#include <cctype>
#include <functional>
#include <limits>
#include <map>

#include "core/error.h"

namespace mha {

const char* const version_text = "mha 0.1.0";

namespace {

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

}  // namespace

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
        {"--format", 0, true,
         [](Config& c, const std::string& v) {
             c.format = parse_choice<Format>("--format", v,
                                             {{"text", Format::Text}, {"json", Format::Json}});
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
             if (v == "auto") {
                 c.attention.reset();
                 return;
             }
             c.attention = parse_choice<AttentionPath>(
                 "--attention", v,
                 {{"standard", AttentionPath::Standard}, {"streaming", AttentionPath::Streaming}});
         }},
        {"--max-memory", 0, true,
         [](Config& c, const std::string& v) { c.max_memory = parse_bytes("--max-memory", v); }},
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
    }
    validate(config);
    return config;
}

std::string help_text() {
    return R"(Usage: mha [options]
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
                         the trace); auto (default): standard when --trace,
                         --format json or --save show them and they fit
                         --max-memory, otherwise streaming
      --max-memory SIZE  refuse configurations needing more (default 2G)

Output:
      --trace            print every step: shape, strides, copies, multiply-adds
      --values           also print each tensor's values (implies --trace)
      --format text|json text (default), or one JSON document with every step
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

  -h, --help             this help
  -V, --version          the version

Errors print one line, "mha: error: ...", and exit with status 2.
)";
}

}  // namespace mha
