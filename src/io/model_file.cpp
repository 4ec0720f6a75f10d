// A character model's arrays, checked and split into embeddings, blocks and head.

#include "io/model_file.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <unordered_map>

#include "core/checked.h"
#include "core/error.h"
#include "io/block_weights.h"
#include "io/finite.h"
#include "io/printable.h"
#include "io/read_file.h"

namespace mha {

namespace {

using Arrays = std::map<std::string, npy::Array>;

const char* const model_layout =
    "a character model: token_embedding.weight, position_embedding.weight, layers.L.* "
    "(nn.TransformerEncoderLayer), norm, lm_head, vocab and heads; see "
    "examples/models/README.md";

const npy::Array& find(const Arrays& arrays, const std::string& name, const std::string& source) {
    const auto found = arrays.find(name);
    if (found == arrays.end()) {
        throw Error(source + ": missing array '" + name + "' (" + model_layout + ")");
    }
    return found->second;
}

Tensor take(const Arrays& arrays, const std::string& name, const Shape& expected,
            const std::string& source) {
    const npy::Array& array = find(arrays, name, source);
    if (array.kind != 'f') {
        throw Error(source + ": array '" + name + "' is " + array.dtype_name() +
                    ", expected float32 or float64");
    }
    if (array.shape != expected) {
        throw Error(source + ": array '" + name + "' has shape " + to_string(array.shape) +
                    ", expected " + to_string(expected));
    }
    check_finite(array, source + ": array '" + name + "'", Infinities::None);
    return npy::to_tensor(array);
}

// An integer vector: vocab or heads.
std::vector<std::int64_t> integers(const Arrays& arrays, const std::string& name,
                                   const std::string& source) {
    const npy::Array& array = find(arrays, name, source);
    if ((array.kind != 'i' && array.kind != 'u') || array.shape.size() != 1 ||
        array.shape[0] == 0) {
        throw Error(source + ": array '" + name + "' must be a non-empty vector of integers, got " +
                    array.dtype_name() + " of shape " + to_string(array.shape));
    }
    // the reader holds integers as double, exact within ±2^53: a value beyond (2^64 - 1 from a
    // uint64 array) is refused here, before any conversion to an integer type
    constexpr double exact = 9007199254740992.0;
    for (std::size_t i = 0; i < array.values.size(); ++i) {
        const double value = array.values[i];
        if (!(std::fabs(value) <= exact)) {
            char text[32];
            std::snprintf(text, sizeof text, "%.3g", value);
            throw Error(source + ": " + name + "[" + std::to_string(i) + "] is about " + text +
                        ", beyond 2^53; expected a " +
                        (name == "heads" ? "head count" : "Unicode code point"));
        }
    }
    return {array.values.begin(), array.values.end()};
}

std::vector<std::uint32_t> read_vocab(const Arrays& arrays, const std::string& source) {
    const std::vector<std::int64_t> codes = integers(arrays, "vocab", source);
    if (codes[0] != 0) {
        throw Error(source + ": vocab[0] must be 0, the unknown token, got " +
                    std::to_string(codes[0]));
    }
    std::set<std::int64_t> seen;
    for (std::size_t i = 1; i < codes.size(); ++i) {
        const bool surrogate = codes[i] >= 0xD800 && codes[i] <= 0xDFFF;
        if (codes[i] <= 0 || codes[i] > 0x10FFFF || surrogate || !seen.insert(codes[i]).second) {
            throw Error(source + ": vocab[" + std::to_string(i) +
                        "] = " + std::to_string(codes[i]) +
                        " is not a new Unicode code point (1..0x10FFFF without the surrogates "
                        "0xD800..0xDFFF, each once)");
        }
    }
    return {codes.begin(), codes.end()};
}

// The arrays under "layers.L." with that prefix removed.
Arrays layer_arrays(const Arrays& arrays, std::size_t layer) {
    const std::string prefix = "layers." + std::to_string(layer) + ".";
    Arrays found;
    for (const auto& [name, array] : arrays) {
        if (name.rfind(prefix, 0) == 0) found.emplace(name.substr(prefix.size()), array);
    }
    return found;
}

void reject_leftovers(const Arrays& arrays, std::size_t layers, const std::string& source) {
    const std::set<std::string> known = {
        "vocab",       "heads",     "token_embedding.weight", "position_embedding.weight",
        "norm.weight", "norm.bias", "lm_head.weight",         "lm_head.bias"};
    for (const auto& [name, array] : arrays) {
        if (known.count(name) || name.rfind(trainer_prefix, 0) == 0) continue;
        bool in_layer = false;
        for (std::size_t l = 0; l < layers && !in_layer; ++l)
            in_layer = name.rfind("layers." + std::to_string(l) + ".", 0) == 0;
        if (!in_layer) {
            throw Error(source + ": unexpected array '" + name + "' of shape " +
                        to_string(array.shape) + " (" + model_layout + ")");
        }
    }
}

// How many tokens encode_text makes of `text`: one per valid character or invalid byte.
std::size_t token_count(const std::string& text) {
    std::size_t count = 0;
    for (std::size_t i = 0; i < text.size(); ++count) {
        i += std::max<std::size_t>(1, utf8_length(text, i));
    }
    return count;
}

}  // namespace

Model model_from_arrays(const Arrays& arrays, const std::string& source) {
    if (!arrays.count("token_embedding.weight") || !arrays.count("vocab")) {
        throw Error(source + ": not a model mha knows; expected " + model_layout);
    }
    Model m;
    m.vocab = read_vocab(arrays, source);
    const std::size_t V = m.vocab.size();
    const npy::Array& embedding = find(arrays, "token_embedding.weight", source);
    const std::size_t E = embedding.shape.size() == 2 ? embedding.shape[1] : 0;
    m.token_embedding = take(arrays, "token_embedding.weight", {V, E}, source);
    const npy::Array& positions = find(arrays, "position_embedding.weight", source);
    const std::size_t context = positions.shape.empty() ? 0 : positions.shape[0];
    m.position_embedding = take(arrays, "position_embedding.weight", {context, E}, source);
    m.norm_weight = take(arrays, "norm.weight", {E}, source);
    m.norm_bias = take(arrays, "norm.bias", {E}, source);
    m.head_weight = take(arrays, "lm_head.weight", {V, E}, source);
    m.head_bias = take(arrays, "lm_head.bias", {V}, source);
    const std::vector<std::int64_t> heads = integers(arrays, "heads", source);
    for (std::size_t l = 0; l < heads.size(); ++l) {
        const std::string where = source + " (layers." + std::to_string(l) + ".*)";
        if (heads[l] <= 0 || E % std::size_t(heads[l]) != 0) {
            throw Error(source + ": heads[" + std::to_string(l) + "] = " +
                        std::to_string(heads[l]) + " does not divide d_model " + std::to_string(E));
        }
        BlockState state = block_from_state_dict(layer_arrays(arrays, l), where);
        if (state.attention.d_model() != E || state.attention.kv_width() != E) {
            throw Error(where + ": attention of width " +
                        std::to_string(state.attention.d_model()) + ", expected d_model " +
                        std::to_string(E));
        }
        m.layers.push_back(
            {std::move(state.attention), std::move(state.block), std::size_t(heads[l]), {}});
    }
    reject_leftovers(arrays, heads.size(), source);
    return m;
}

std::vector<std::pair<std::string, Tensor>> result_arrays(const ModelResult& r,
                                                          std::size_t layer) {
    std::vector<std::pair<std::string, Tensor>> arrays = {{"logits", r.logits},
                                                          {"attn_weights", r.weights[layer]}};
    for (std::size_t l = 0; l < r.weights.size(); ++l)
        arrays.emplace_back("attn_weights." + std::to_string(l), r.weights[l]);
    for (std::size_t l = 0; l < r.hidden.size(); ++l)
        arrays.emplace_back("hidden." + std::to_string(l), r.hidden[l]);
    return arrays;
}

std::vector<std::pair<std::string, Tensor>> model_arrays(const Model& t,
                                                         const std::string& prefix) {
    std::vector<std::pair<std::string, Tensor>> arrays = {
        {prefix + "token_embedding.weight", t.token_embedding},
        {prefix + "position_embedding.weight", t.position_embedding}};
    for (std::size_t l = 0; l < t.layers.size(); ++l) {
        const ModelLayer& layer = t.layers[l];
        const std::string under = prefix + "layers." + std::to_string(l) + ".";
        for (auto& array :
             state_dict_arrays(layer.attention, own_block_attention_names(layer.attention), under))
            arrays.push_back(std::move(array));
        for (auto& array : block_arrays(layer.block, BlockNaming::Torch, under))
            arrays.push_back(std::move(array));
    }
    arrays.emplace_back(prefix + "norm.weight", t.norm_weight);
    arrays.emplace_back(prefix + "norm.bias", t.norm_bias);
    arrays.emplace_back(prefix + "lm_head.weight", t.head_weight);
    arrays.emplace_back(prefix + "lm_head.bias", t.head_bias);
    return arrays;
}

std::vector<std::pair<std::string, npy::Array>> model_integer_arrays(const Model& model) {
    npy::Array vocab{{model.vocab.size()}, 'i', 4, {model.vocab.begin(), model.vocab.end()}};
    npy::Array heads{{model.layers.size()}, 'i', 4, {}};
    for (const ModelLayer& layer : model.layers) heads.values.push_back(double(layer.heads));
    return {{"vocab", std::move(vocab)}, {"heads", std::move(heads)}};
}

Model load_model(const std::string& path, std::uint64_t max_memory) {
    const Ledger ledger(max_memory);
    const std::string bytes = read_file(path, ledger);
    // the file and every array decoded (a double here, a float in the model), from the
    // headers before anything is decoded
    const std::uint64_t need = checked_sum(
        {bytes.size(),
         checked_product({npy::npz_value_count(bytes, path), 12}, "the values of " + path)},
        "the memory for " + path);
    ledger.check(need, path, "the file and its arrays need " + byte_size(need) + " to load",
                 "a smaller model");
    return model_from_arrays(npy::parse_npz(bytes, path, ledger), path);
}

ModelText encode_text(const std::string& text, const Model& model, bool last_is_target) {
    if (text.empty()) throw Error("--text is empty; --model needs at least one character");
    const std::size_t count = token_count(text);  // before any lookup: O(N) whatever V is
    if (count > model.context() + (last_is_target ? 1 : 0)) {
        throw Error(
            "--text has " + std::to_string(count) + " characters; the model's context is " +
            std::to_string(model.context()) +
            (last_is_target ? " (--backward reads one more, the last only as a target)" : ""));
    }
    std::unordered_map<std::uint32_t, std::size_t> token_of;
    for (std::size_t t = 1; t < model.vocab.size(); ++t) token_of.emplace(model.vocab[t], t);
    ModelText out;
    for (std::size_t i = 0; i < text.size();) {
        std::size_t length = utf8_length(text, i);
        std::size_t token = unknown_token;
        if (length == 0) {
            length = 1;
        } else {
            const auto found = token_of.find(utf8_code_point(text, i, length));
            if (found != token_of.end()) token = found->second;
        }
        out.unknown += token == unknown_token;
        out.tokens.push_back(token);
        out.characters.push_back(text.substr(i, length));
        i += length;
    }
    return out;
}

}  // namespace mha
