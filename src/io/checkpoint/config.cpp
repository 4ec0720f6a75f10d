// config.json read family by family: sizes, norm, feed-forward, and each layer's attention.

#include "io/checkpoint/config.h"

#include <cmath>
#include <optional>

#include "core/error.h"
#include "io/read_file.h"

namespace mha::checkpoint {

namespace {

// The largest size a key may give (2^32), and the most layers (no model has a thousand).
constexpr std::uint64_t max_config_size = std::uint64_t(1) << 32;
constexpr std::size_t max_layers = 1 << 16;

// One JSON object of config.json and where it is: typed reads of its keys, a null read as
// absent (as transformers reads None), each key read from the file noted in `keys`.
struct Keys {
    const json::Value& object;
    json::Where where;
    std::vector<std::string>& keys;

    const json::Value* find(const std::string& key) const {
        const json::Value* v = object.find(key);
        return v && v->kind != json::Kind::null ? v : nullptr;
    }
    json::Where at(const std::string& key) const { return where.at(key); }
    // The value as written ("1e-06", "true", "\"silu\"") for the notes.
    std::string written(const json::Value& v) const {
        return v.kind == json::Kind::string    ? "\"" + v.text + "\""
               : v.kind == json::Kind::boolean ? (v.boolean ? "true" : "false")
                                               : v.text;
    }
    void note(const std::string& key, const json::Value& v, const std::string& effect) {
        keys.push_back(where.key.empty() ? "" : where.key + ".");
        keys.back() += key + " " + written(v) + ": " + effect;
    }
    [[noreturn]] void missing(const std::string& key) const {
        throw Error(where.what + ": no key \"" + (where.key.empty() ? "" : where.key + ".") + key +
                    "\"; the " + "family needs it");
    }
    std::size_t size(const std::string& key, const std::string& effect) {
        const json::Value* v = find(key);
        if (!v) missing(key);
        const std::uint64_t n = json::as_size(*v, at(key));
        if (n == 0 || n > max_config_size) {
            json::refuse(at(key), *v,
                         "expected a size from 1 to " + std::to_string(max_config_size));
        }
        note(key, *v, effect);
        return std::size_t(n);
    }
    std::size_t size_or(const std::string& key, std::size_t fallback, const std::string& effect) {
        return find(key) ? size(key, effect) : fallback;
    }
    double number_or(const std::string& key, double fallback, const std::string& effect) {
        const json::Value* v = find(key);
        if (!v) return fallback;
        const double x = json::as_double(*v, at(key));
        note(key, *v, effect);
        return x;
    }
    double positive_or(const std::string& key, double fallback, const std::string& effect) {
        const double x = number_or(key, fallback, effect);
        if (find(key) && !(x > 0)) json::refuse(at(key), *find(key), "expected a positive number");
        return x;
    }
    // A soft-cap: `fallback` when the key is absent, none (0) when it is null.
    double cap_or(const std::string& key, double fallback, const std::string& effect) {
        const json::Value* v = object.find(key);
        if (v && v->kind == json::Kind::null) return 0.0;
        return positive_or(key, fallback, effect);
    }
    bool flag_or(const std::string& key, bool fallback, const std::string& effect) {
        const json::Value* v = find(key);
        if (!v) return fallback;
        const bool b = json::as_bool(*v, at(key));
        note(key, *v, effect);
        return b;
    }
    std::string text_or(const std::string& key, const std::string& fallback) {
        const json::Value* v = find(key);
        return v ? json::as_string(*v, at(key)) : fallback;
    }
    // Refuses `key` when it is present and not `expected`: maths mha does not do.
    void refuse_unless(const std::string& key, bool expected, const std::string& why) {
        const json::Value* v = find(key);
        if (v && json::as_bool(*v, at(key)) != expected) json::refuse(at(key), *v, why);
    }
};

// The layers, at most max_layers of them.
std::size_t layer_count(Keys& k, const std::string& key) {
    const std::size_t layers = k.size(key, "the layers");
    if (layers > max_layers) {
        json::refuse(k.at(key), *k.find(key),
                     "expected at most " + std::to_string(max_layers) + " layers");
    }
    return layers;
}

Family family_of(const std::string& type, const json::Value& v, const json::Where& where) {
    const std::pair<const char*, Family> families[] = {
        {"gpt2", Family::Gpt2},          {"llama", Family::Llama},  {"mistral", Family::Mistral},
        {"qwen2", Family::Qwen2},        {"qwen3", Family::Qwen3},  {"gemma2", Family::Gemma2},
        {"gemma3_text", Family::Gemma3}, {"gemma3", Family::Gemma3}};
    for (const auto& [name, family] : families)
        if (type == name) return family;
    json::refuse(where, v,
                 "model_type \"" + type +
                     "\" is not read; mha reads gpt2, llama, mistral, qwen2, qwen3, gemma2, "
                     "gemma3_text and gemma3");
}

Activation activation_of(Keys& k, const std::string& key, const std::string& fallback) {
    const std::string name = k.text_or(key, fallback);
    Activation a;
    if (name == "silu" || name == "swish") {
        a = Activation::Silu;
    } else if (name == "gelu_new" || name == "gelu_pytorch_tanh") {
        a = Activation::GeluTanh;
    } else if (name == "gelu") {
        a = Activation::Gelu;
    } else {
        json::refuse(k.at(key), *k.find(key),
                     "activation \"" + name +
                         "\" is not read; mha reads silu, gelu_new, gelu_pytorch_tanh and gelu");
    }
    if (const json::Value* v = k.find(key)) {
        k.note(key, *v, std::string("the feed-forward's activation, ") + activation_name(a));
    }
    return a;
}

// A RoPE description: rope_type (or the legacy "type") and its keys in `params`, the base
// from `theta` (a v4 rope_theta) unless params holds rope_theta (v5).
Rope rope_of(Keys& params, double theta, std::string& source) {
    Rope rope;
    rope.theta = params.positive_or("rope_theta", theta, "RoPE's base");
    std::string type = params.text_or("rope_type", params.text_or("type", "default"));
    const std::string type_key = params.find("rope_type") ? "rope_type" : "type";
    std::string words = "rope_theta " + std::to_string(rope.theta);
    words.erase(words.find_last_not_of('0') + 1);
    if (words.back() == '.') words.pop_back();
    if (type == "linear") {
        rope.scaling = RopeScaling::Linear;
        rope.factor = params.positive_or("factor", 0, "inv_freq divided by it");
        if (!params.find("factor")) params.missing("factor");
    } else if (type == "llama3") {
        rope.scaling = RopeScaling::Llama3;
        for (const char* key :
             {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"})
            if (!params.find(key)) params.missing(key);
        rope.factor = params.positive_or("factor", 0, "llama3 scaling's factor");
        rope.low_freq_factor = params.positive_or("low_freq_factor", 0, "llama3 scaling");
        rope.high_freq_factor = params.positive_or("high_freq_factor", 0, "llama3 scaling");
        rope.original_context =
            double(params.size("original_max_position_embeddings", "llama3 scaling"));
        if (rope.high_freq_factor <= rope.low_freq_factor) {
            json::refuse(params.at("high_freq_factor"), *params.find("high_freq_factor"),
                         "expected high_freq_factor above low_freq_factor");
        }
    } else if (type != "default") {
        json::refuse(
            params.at(type_key), *params.find(type_key),
            "rope_type \"" + type + "\" is not read; mha reads default, linear and llama3");
    }
    if (const json::Value* v = params.find("partial_rotary_factor")) {
        if (json::as_double(*v, params.at("partial_rotary_factor")) != 1.0)
            json::refuse(params.at("partial_rotary_factor"), *v, "partial RoPE is not done");
    }
    if (rope.scaling != RopeScaling::None) {
        std::string factor = std::to_string(rope.factor);
        factor.erase(factor.find_last_not_of('0') + 1);
        if (factor.back() == '.') factor.pop_back();
        words += ", " + type + " scaling, factor " + factor;
    }
    source = words;
    return rope;
}

// The sliding layers: layer_types when given, else the family's rule.
std::vector<bool> sliding_layers(Keys& k, Family family, std::size_t layers, bool has_window) {
    std::vector<bool> sliding(layers, false);
    if (const json::Value* types = k.find("layer_types")) {
        const auto& items = json::as_array(*types, k.at("layer_types"));
        if (items.size() != layers) {
            json::refuse(k.at("layer_types"), *types,
                         "expected " + std::to_string(layers) + " entries (num_hidden_layers)");
        }
        for (std::size_t l = 0; l < layers; ++l) {
            const std::string& t = json::as_string(items[l], k.at("layer_types").at(l));
            if (t != "full_attention" && t != "sliding_attention") {
                json::refuse(k.at("layer_types").at(l), items[l],
                             "layer type \"" + t +
                                 "\" is not read; mha reads full_attention and sliding_attention");
            }
            sliding[l] = t == "sliding_attention";
        }
        k.keys.push_back((k.where.key.empty() ? "" : k.where.key + ".") +
                         "layer_types: which layers are sliding");
        return sliding;
    }
    if (!has_window) return sliding;
    std::size_t pattern = 0, first = 0;
    switch (family) {
        case Family::Mistral:
            pattern = 1;
            break;
        case Family::Qwen2:
        case Family::Qwen3:
            first = k.size_or("max_window_layers", 28, "layers from this one on are sliding");
            pattern = 1;
            break;
        case Family::Gemma2:
            pattern = 2;
            break;
        case Family::Gemma3:
            pattern = k.size_or("sliding_window_pattern", 6, "every pattern-th layer is global");
            break;
        default:
            return sliding;
    }
    for (std::size_t l = first; l < layers; ++l)
        sliding[l] = pattern == 1 || (l + 1) % pattern != 0;
    return sliding;
}

// An empty object: the keys of a RoPE that config.json does not describe apart from its base.
const json::Value& no_keys() {
    static const json::Value empty = [] {
        json::Value v;
        v.kind = json::Kind::object;
        return v;
    }();
    return empty;
}

// The window, RoPE and their words for each layer of a RoPE family.
void read_layers(Keys& k, Config& c) {
    const bool qwen = c.family == Family::Qwen2 || c.family == Family::Qwen3;
    std::size_t window = 0;
    if (k.find("sliding_window") &&
        (!qwen || k.flag_or("use_sliding_window", false, "Qwen's sliding layers are on"))) {
        window = k.size("sliding_window", "the keys a sliding layer sees");
    }
    const std::vector<bool> sliding = sliding_layers(k, c.family, c.layers, window > 0);
    const double default_theta = c.family == Family::Gemma3 ? 1e6 : 10000.0;
    const double theta = k.positive_or("rope_theta", default_theta, "RoPE's base");
    // the global and local layers' RoPE: per layer type (v5), or rope_scaling and, for Gemma 3,
    // rope_local_base_freq (v4)
    std::string global_source, local_source;
    Rope global, local;
    if (const json::Value* p = k.find("rope_parameters")) {
        Keys params{json::as_object(*p, k.at("rope_parameters")), k.at("rope_parameters"), k.keys};
        if (params.find("full_attention") || params.find("sliding_attention")) {
            for (const char* type : {"full_attention", "sliding_attention"}) {
                const json::Value* nested = params.find(type);
                if (!nested) params.missing(type);
                Keys one{json::as_object(*nested, params.at(type)), params.at(type), k.keys};
                (std::string(type) == "full_attention" ? global : local) =
                    rope_of(one, theta,
                            std::string(type) == "full_attention" ? global_source : local_source);
            }
            global_source += " (rope_parameters.full_attention)";
            local_source += " (rope_parameters.sliding_attention)";
        } else {
            global = local = rope_of(params, theta, global_source);
            global_source += " (rope_parameters)";
            local_source = global_source;
        }
    } else {
        const json::Value* s = k.find("rope_scaling");
        if (s) {
            Keys scaling{json::as_object(*s, k.at("rope_scaling")), k.at("rope_scaling"), k.keys};
            global = rope_of(scaling, theta, global_source);
            global_source += " (rope_theta, rope_scaling)";
        } else {
            Keys none{no_keys(), k.at("rope_scaling"), k.keys};
            global = rope_of(none, theta, global_source);
            global_source += " (rope_theta)";
        }
        local = global;
        local_source = global_source;
        if (c.family == Family::Gemma3) {
            Keys none{no_keys(), k.at("rope_local_base_freq"), k.keys};
            local = rope_of(
                none,
                k.positive_or("rope_local_base_freq", 10000.0, "RoPE's base on the sliding layers"),
                local_source);
            local_source += " (rope_local_base_freq)";
        }
    }
    for (std::size_t l = 0; l < c.layers; ++l) {
        LayerConfig layer;
        layer.window = sliding[l] ? window : 0;
        layer.rope = sliding[l] ? local : global;
        layer.rope_source = sliding[l] ? local_source : global_source;
        layer.window_source =
            sliding[l]   ? "sliding_window " + std::to_string(window) + ": this layer is local"
            : window > 0 ? "sliding_window " + std::to_string(window) +
                               ": this layer is global, it sees every earlier key"
                         : "";
        c.layer.push_back(layer);
    }
}

void read_gpt2(Keys& k, Config& c) {
    c.hidden_size = k.size("n_embd", "d_model");
    c.heads = c.kv_heads = k.size("n_head", "the heads");
    c.layers = layer_count(k, "n_layer");
    c.max_positions = k.size("n_positions", "the learned position table's rows");
    c.intermediate_size = k.size_or("n_inner", 4 * c.hidden_size, "d_ff");
    c.head_dim = c.hidden_size / c.heads;
    c.norm = NormKind::Layer;
    c.norm_eps = k.number_or("layer_norm_epsilon", 1e-5, "LayerNorm's ε");
    if (c.norm_eps != 1e-5) {
        json::refuse(k.at("layer_norm_epsilon"), *k.find("layer_norm_epsilon"),
                     "mha's LayerNorm has ε 1e-5");
    }
    c.activation = activation_of(k, "activation_function", "gelu_new");
    c.gated = false;
    c.qkv_bias = c.o_bias = c.mlp_bias = true;
    c.tied = k.flag_or("tie_word_embeddings", true, "the LM head is wte");
    c.rope = false;
    k.refuse_unless("scale_attn_weights", true, "unscaled attention scores are not done");
    k.refuse_unless("scale_attn_by_inverse_layer_idx", false,
                    "scaling by the inverse layer index is not done");
    k.refuse_unless("add_cross_attention", false,
                    "cross-attention blocks (an encoder-decoder) are not done");
    c.layer.assign(c.layers, LayerConfig{});
}

void read_rope_family(Keys& k, Config& c) {
    const bool gemma = c.family == Family::Gemma2 || c.family == Family::Gemma3;
    c.hidden_size = k.size("hidden_size", "d_model");
    c.intermediate_size = k.size("intermediate_size", "d_ff");
    c.layers = layer_count(k, "num_hidden_layers");
    c.heads = k.size("num_attention_heads", "the query heads");
    const std::size_t kv_default = c.family == Family::Mistral ? 8 : gemma ? 4 : c.heads;
    c.kv_heads = k.size_or("num_key_value_heads", kv_default, "the key/value heads (GQA)");
    const std::size_t dim_default = c.family == Family::Qwen3 ? 128
                                    : gemma                   ? 256
                                                              : c.hidden_size / c.heads;
    c.head_dim = k.size_or("head_dim", dim_default, "d_k");
    c.max_positions = k.size("max_position_embeddings", "the most tokens read");
    c.norm = NormKind::Rms;
    c.norm_eps = k.positive_or("rms_norm_eps", 1e-6, "RMSNorm's ε");
    c.activation = gemma ? activation_of(k, "hidden_activation", "gelu_pytorch_tanh")
                         : activation_of(k, "hidden_act", "silu");
    c.tied = k.flag_or("tie_word_embeddings", gemma, "the LM head is embed_tokens");
    const bool bias = k.flag_or("attention_bias", false, "q, k, v and o projections' biases");
    c.qkv_bias = c.family == Family::Qwen2 || (c.family != Family::Mistral && bias);
    c.o_bias = c.family != Family::Qwen2 && c.family != Family::Mistral && bias;
    if (c.family == Family::Llama) c.mlp_bias = k.flag_or("mlp_bias", false, "the MLP's biases");
    c.qk_norm = c.family == Family::Qwen3 || c.family == Family::Gemma3;
    if (gemma) {
        c.norm_plus_one = c.sandwich = true;
        c.embedding_scale = float(std::sqrt(double(c.hidden_size)));
        c.query_pre_attn_scalar = k.positive_or("query_pre_attn_scalar", 256, "scores / sqrt(S)");
        // Gemma 3's attention never applies attn_logit_softcapping in transformers, and its
        // image-text model no final_logit_softcapping: read as transformers runs them
        if (c.family == Family::Gemma2) {
            c.attn_softcap =
                k.cap_or("attn_logit_softcapping", 50.0, "the attention scores' soft-cap");
        }
        if (!c.multimodal) {
            c.final_softcap =
                k.cap_or("final_logit_softcapping", c.family == Family::Gemma2 ? 30.0 : 0.0,
                         "the logits' soft-cap");
        }
        k.refuse_unless("use_bidirectional_attention", false,
                        "bidirectional attention is not done");
    }
    read_layers(k, c);
}

// The object holding the text model's keys: text_config for gemma3, else the file's.
Config read_object(const json::Value& root, const std::string& what) {
    Config c;
    c.file = what;
    std::vector<std::string> keys;
    Keys top{json::as_object(root, {what, ""}), {what, ""}, keys};
    const json::Value* type = top.find("model_type");
    if (!type) top.missing("model_type");
    c.model_type = json::as_string(*type, top.at("model_type"));
    c.family = family_of(c.model_type, *type, top.at("model_type"));
    const json::Value* object = &root;
    json::Where where{what, ""};
    if (c.model_type == "gemma3") {
        c.multimodal = true;
        const json::Value* text = top.find("text_config");
        if (!text) top.missing("text_config");
        object = &json::as_object(*text, top.at("text_config"));
        where = top.at("text_config");
    }
    Keys k{*object, where, c.keys};
    if (c.family == Family::Gpt2) {
        read_gpt2(k, c);
    } else {
        read_rope_family(k, c);
        if (c.multimodal && !k.find("tie_word_embeddings"))
            c.tied = top.flag_or("tie_word_embeddings", true, "the LM head is embed_tokens");
    }
    c.vocab_size = k.size("vocab_size", "the vocabulary");
    for (const char* key : {"use_qk_norm", "attention_chunk_size", "no_rope_layers"}) {
        if (k.find(key)) json::refuse(k.at(key), *k.find(key), "not done by mha");
    }
    if (c.hidden_size % c.heads != 0 && c.family == Family::Gpt2) {
        json::refuse(k.at("n_head"), *k.find("n_head"), "n_embd must divide into the heads");
    }
    if (c.heads % c.kv_heads != 0) {
        const std::string divisor =
            "expected a divisor of num_attention_heads " + std::to_string(c.heads);
        if (const json::Value* v = k.find("num_key_value_heads"))
            json::refuse(k.at("num_key_value_heads"), *v, divisor);
        throw Error(what + ": num_key_value_heads is absent and the " + c.model_type +
                    " default, " + std::to_string(c.kv_heads) +
                    ", is not a divisor of "
                    "num_attention_heads " +
                    std::to_string(c.heads) + "; give it");
    }
    if (c.head_dim == 0) {
        throw Error(what + ": hidden_size " + std::to_string(c.hidden_size) +
                    " gives heads of width 0 for " + std::to_string(c.heads) +
                    " heads; give head_dim");
    }
    if (c.rope && c.head_dim % 2 != 0) {
        throw Error(what + ": head_dim " + std::to_string(c.head_dim) +
                    " is odd; RoPE needs pairs");
    }
    c.keys.insert(c.keys.end(), keys.begin(), keys.end());
    return c;
}

}  // namespace

Config parse_config(const std::string& text, const std::string& what) {
    return read_object(json::parse(text, what), what);
}

Config read_config(const std::string& path, const Ledger& ledger) {
    const std::string text = read_file(path, ledger);
    Ledger parsing = ledger;
    parsing.hold(text.size());
    parsing.check(json::parse_bytes(text), path,
                  "its parsed tree needs " + std::to_string(json::parse_bytes(text)) + " B");
    return parse_config(text, path);
}

}  // namespace mha::checkpoint
