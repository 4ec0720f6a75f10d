// State-dict layouts: nn.MultiheadAttention (packed or separate projections), from-scratch
// modules (W_q/W_k/W_v/W_o, any case), a fused W_qkv, Hugging Face's q_proj ... o_proj,
// GPT-2's c_attn and c_proj, and timm's ViT qkv and proj.

#include "io/weights.h"

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "core/error.h"
#include "io/finite.h"

namespace mha {

namespace {

using Arrays = std::map<std::string, npy::Array>;

// Reads arrays by name, remembering which were used so leftovers can be reported.
class StateDict {
public:
    StateDict(const Arrays& arrays, std::string source, std::string layout)
        : arrays_(arrays), source_(std::move(source)), layout_(std::move(layout)) {}

    bool has(const std::string& name) const { return arrays_.count(name) != 0; }

    // The array `name`, checked against `expected`; a weight's array is recorded as holding
    // `parts` (stacked along dim 0), stored transposed or not.
    Tensor take(const std::string& name, const Shape& expected, std::vector<WeightPart> parts = {},
                bool transposed = false) {
        const auto found = arrays_.find(name);
        if (found == arrays_.end()) {
            throw Error(source_ + ": missing array '" + name + "' of shape " + to_string(expected) +
                        " (" + layout_ + ")");
        }
        if (found->second.shape != expected) {
            throw Error(source_ + ": array '" + name + "' has shape " +
                        to_string(found->second.shape) + ", expected " + to_string(expected));
        }
        Tensor t = float_tensor(found->second, source_ + ": array '" + name + "'");
        used_.insert(name);
        if (!parts.empty()) names_.push_back({name, std::move(parts), transposed, expected});
        return t;
    }

    Tensor take_optional(const std::string& name, const Shape& expected,
                         std::vector<WeightPart> parts = {}) {
        return has(name) ? take(name, expected, std::move(parts)) : Tensor();
    }

    const StateDictNames& names() const { return names_; }

    // Leaves out array `name`, when there is one of rank `rank`, as read (a buffer, not a weight).
    void pass_over(const std::string& name, std::size_t rank) {
        if (has(name) && arrays_.at(name).shape.size() == rank) used_.insert(name);
    }

    void reject_leftovers() const {
        for (const auto& [name, array] : arrays_) {
            if (used_.count(name) == 0) {
                throw Error(source_ + ": unexpected array '" + name + "' of shape " +
                            to_string(array.shape) + " (" + layout_ + ")");
            }
        }
    }

    // The leading size of `name`, to learn d_model before the shapes are checked.
    std::size_t rows_of(const std::string& name) const {
        const auto found = arrays_.find(name);
        if (found == arrays_.end()) return 0;
        const Shape& shape = found->second.shape;
        if (shape.size() != 2) {
            throw Error(source_ + ": array '" + name + "' has shape " + to_string(shape) +
                        ", expected a matrix (out_features, in_features)");
        }
        return shape[0];
    }

    std::size_t cols_of(const std::string& name) const {
        return has(name) && rows_of(name) != 0 ? arrays_.at(name).shape[1] : 0;
    }

    // A size learnt from array `name` (dimension, e.g. "E"), refused when it is 0: a state
    // dict with E = 0 would divide by zero further on.
    std::size_t nonzero(std::size_t size, const char* dimension, const std::string& name) const {
        if (size == 0 && has(name)) {
            throw Error(source_ + ": array '" + name + "' has shape " +
                        to_string(arrays_.at(name).shape) + ", so " + dimension +
                        "=0; every size must be at least 1");
        }
        return size;
    }

private:
    const Arrays& arrays_;
    std::string source_;
    std::string layout_;
    std::set<std::string> used_;
    StateDictNames names_;
};

using Part = WeightPart;

// Rows [part * E, (part + 1) * E) of a packed (3E, ...) tensor, as a copy.
Tensor part_of(const Tensor& packed, std::size_t part, std::size_t E) {
    if (packed.empty()) return packed;
    Shape shape = packed.shape();
    shape[0] = E;
    const std::size_t count = packed.numel() / 3;
    const float* begin = packed.data() + part * count;
    return Tensor(shape, std::vector<float>(begin, begin + count));
}

const char* const torch_layout =
    "nn.MultiheadAttention: in_proj_weight (3E, E) or q/k/v_proj_weight, in_proj_bias (3E), "
    "out_proj.weight (E, E), out_proj.bias (E), with add_bias_kv bias_k and bias_v (1, 1, E)";

// add_bias_kv's bias_k and bias_v (1, 1, E) -> (E) each; both or neither.
void take_bias_kv(StateDict& dict, std::size_t E, const std::string& source, Weights& w) {
    if (dict.has("bias_k") != dict.has("bias_v")) {
        throw Error(source + ": '" + std::string(dict.has("bias_k") ? "bias_k" : "bias_v") +
                    "' without '" + (dict.has("bias_k") ? "bias_v" : "bias_k") +
                    "'; add_bias_kv=True saves both, each of shape (1, 1, " + std::to_string(E) +
                    ")");
    }
    if (!dict.has("bias_k")) return;
    w.bias_k = dict.take("bias_k", {1, 1, E}, {Part::KvBiasK}).view({E});
    w.bias_v = dict.take("bias_v", {1, 1, E}, {Part::KvBiasV}).view({E});
}

Weights torch_packed(StateDict& dict, const std::string& source) {
    const std::size_t E = dict.nonzero(dict.cols_of("in_proj_weight"), "E", "in_proj_weight");
    Weights w;
    const Tensor weight = dict.take("in_proj_weight", {3 * E, E}, {Part::Q, Part::K, Part::V});
    const Tensor bias =
        dict.take_optional("in_proj_bias", {3 * E}, {Part::BiasQ, Part::BiasK, Part::BiasV});
    split_packed(weight, bias, E, w);
    take_bias_kv(dict, E, source, w);
    w.w_o = dict.take("out_proj.weight", {E, E}, {Part::O});
    w.b_o = dict.take_optional("out_proj.bias", {E}, {Part::BiasO});
    return w;
}

Weights torch_separate(StateDict& dict, const std::string& source) {
    const std::size_t E = dict.nonzero(dict.rows_of("q_proj_weight"), "E", "q_proj_weight");
    Weights w;
    take_bias_kv(dict, E, source, w);
    w.w_q = dict.take("q_proj_weight", {E, E}, {Part::Q});
    w.w_k = dict.take("k_proj_weight",
                      {E, dict.nonzero(dict.cols_of("k_proj_weight"), "kdim", "k_proj_weight")},
                      {Part::K});
    w.w_v = dict.take("v_proj_weight",
                      {E, dict.nonzero(dict.cols_of("v_proj_weight"), "vdim", "v_proj_weight")},
                      {Part::V});
    const Tensor bias =
        dict.take_optional("in_proj_bias", {3 * E}, {Part::BiasQ, Part::BiasK, Part::BiasV});
    w.b_q = part_of(bias, 0, E);
    w.b_k = part_of(bias, 1, E);
    w.b_v = part_of(bias, 2, E);
    w.w_o = dict.take("out_proj.weight", {E, E}, {Part::O});
    w.b_o = dict.take_optional("out_proj.bias", {E}, {Part::BiasO});
    return w;
}

// The four projections' module names in one naming: "W_q." ... "W_o." (from-scratch), or
// "q_proj." ... "o_proj." (Hugging Face); qkv names the fused projection, when there is one.
struct ModuleNames {
    std::string q, k, v, o, qkv;
};

// Modules with .weight and an optional .bias: separate q, k, v (k and v with G·d_k rows) or a
// fused qkv, then o. W_q has h·d_k rows: E unless the heads are wider or narrower (--head-dim).
Weights scratch(StateDict& dict, const ModuleNames& n) {
    const bool fused = !n.qkv.empty() && dict.has(n.qkv + "weight");
    const std::string first = fused ? n.qkv + "weight" : n.q + "weight";
    const std::size_t E = dict.nonzero(dict.cols_of(first), "E", first);
    std::size_t q_width = E;  // h·d_k
    Weights w;
    if (fused) {
        q_width = dict.rows_of(first) / 3;
        const Tensor weight = dict.take(first, {3 * q_width, E}, {Part::Q, Part::K, Part::V});
        const Tensor bias = dict.take_optional(n.qkv + "bias", {3 * q_width},
                                               {Part::BiasQ, Part::BiasK, Part::BiasV});
        split_packed(weight, bias, q_width, w);
    } else {
        const std::size_t kv_width =  // G·d_k, h·d_k unless GQA
            dict.nonzero(dict.rows_of(n.k + "weight"), "G·d_k", n.k + "weight");
        q_width = dict.nonzero(dict.rows_of(first), "h·d_k", first);
        w.w_q = dict.take(first, {q_width, E}, {Part::Q});
        w.w_k = dict.take(n.k + "weight", {kv_width, E}, {Part::K});
        w.w_v = dict.take(n.v + "weight", {kv_width, E}, {Part::V});
        w.b_q = dict.take_optional(n.q + "bias", {q_width}, {Part::BiasQ});
        w.b_k = dict.take_optional(n.k + "bias", {kv_width}, {Part::BiasK});
        w.b_v = dict.take_optional(n.v + "bias", {kv_width}, {Part::BiasV});
    }
    w.w_o = dict.take(n.o + "weight", {E, q_width}, {Part::O});  // (d_model, h·d_k)
    w.b_o = dict.take_optional(n.o + "bias", {E}, {Part::BiasO});
    return w;
}

const char* const timm_layout =
    "timm's ViT attention: qkv.weight (3E, E), optional qkv.bias (3E), proj.weight (E, E), "
    "optional proj.bias (E)";

const char* const gpt2_layout =
    "GPT-2 attention, Conv1D weights stored (in, out): c_attn.weight (E, 3E), c_attn.bias (3E), "
    "c_proj.weight (E, E), c_proj.bias (E)";

// GPT-2's Conv1D computes x @ W + b with W (in_features, out_features), the transpose of
// nn.Linear's (out, in): c_attn.weight (E, 3E) transposed is in_proj_weight (3E, E), split into
// W_q, W_k, W_v as nn.MultiheadAttention's is, and c_proj.weight transposed is W_o. Older
// Hugging Face versions also save the causal mask buffer 'bias' (1, 1, L, L) and 'masked_bias'
// (a scalar); they are passed over (--causal gives the mask).
Weights gpt2(StateDict& dict) {
    const std::size_t E = dict.nonzero(dict.rows_of("c_attn.weight"), "E", "c_attn.weight");
    Weights w;
    const Tensor weight = dict.take("c_attn.weight", {E, 3 * E}, {Part::Q, Part::K, Part::V}, true)
                              .transpose(0, 1)
                              .contiguous();
    split_packed(
        weight, dict.take_optional("c_attn.bias", {3 * E}, {Part::BiasQ, Part::BiasK, Part::BiasV}),
        E, w);
    w.w_o = dict.take("c_proj.weight", {E, E}, {Part::O}, true).transpose(0, 1).contiguous();
    w.b_o = dict.take_optional("c_proj.bias", {E}, {Part::BiasO});
    dict.pass_over("bias", 4);
    dict.pass_over("masked_bias", 0);
    return w;
}

// QK-norm's RMSNorm weights, q_norm.weight and k_norm.weight (d_k), when the dict has
// either; their size is checked against d_k with the other shapes.
void take_qk_norm(StateDict& dict, const Arrays& arrays, Weights& w) {
    if (!dict.has("q_norm.weight") && !dict.has("k_norm.weight")) return;
    const auto size_of = [&arrays](const std::string& name, const std::string& other) {
        const auto found = arrays.count(name) ? arrays.find(name) : arrays.find(other);
        return Shape{found->second.shape.empty() ? 0 : found->second.shape[0]};
    };
    w.q_norm = dict.take("q_norm.weight", size_of("q_norm.weight", "k_norm.weight"), {Part::QNorm});
    w.k_norm = dict.take("k_norm.weight", size_of("k_norm.weight", "q_norm.weight"), {Part::KNorm});
}

// The output gate, attn_gate.weight (h·d_k or h, d_model) and attn_gate.bias, in any naming;
// its rows are checked against h·d_k and h with the other shapes.
void take_gate(StateDict& dict, const Arrays& arrays, Weights& w) {
    if (!dict.has("attn_gate.weight")) return;
    const Shape shape = arrays.at("attn_gate.weight").shape;
    w.w_g = dict.take("attn_gate.weight", {dict.rows_of("attn_gate.weight"), w.d_model()},
                      {Part::Gate});
    w.b_g = dict.take_optional("attn_gate.bias", {shape[0]}, {Part::BiasGate});
}

// Rows of a (h·2·d, ...) array whose head i holds [part 0 (d rows); part 1 (d rows)]: part `part`
// (h·d, ...) of them, a copy.
Tensor interleaved_part(const npy::Array& array, std::size_t heads, std::size_t part) {
    const Tensor all = npy::to_tensor(array);
    Shape shape = all.shape();
    shape[0] /= 2;
    const std::size_t row = all.numel() / all.size(0), d = shape[0] / heads;
    std::vector<float> values;
    for (std::size_t i = 0; i < heads; ++i) {
        const float* begin = all.data() + (2 * i + part) * d * row;
        values.insert(values.end(), begin, begin + d * row);
    }
    return Tensor(shape, std::move(values));
}

// Qwen3-Next's gated q_proj (2·h·d_k, E), each head's 2·d_k rows [query; gate], as q_proj and
// attn_gate (h·d_k, E) each (and the biases); the names say how to put them back.
Arrays split_qwen_gate(Arrays arrays, std::size_t heads, const std::string& source) {
    const std::size_t rows = arrays.at("q_proj.weight").shape[0];
    if (heads == 0 || rows % (2 * heads) != 0) {
        throw Error(source + ": q_proj.weight has " + std::to_string(rows) +
                    " rows, twice o_proj's input: a gated query (Qwen3-Next) whose rows split "
                    "into h heads of [query; gate], so give --heads (h must divide " +
                    std::to_string(rows / 2) + ")");
    }
    for (const std::string kind : {"weight", "bias"}) {
        const auto found = arrays.find("q_proj." + kind);
        if (found == arrays.end()) continue;
        const npy::Array both = found->second;
        const auto as_array = [&](const Tensor& t) {
            npy::Array a = both;
            a.shape = t.shape();
            a.values.assign(t.data(), t.data() + t.numel());
            return a;
        };
        found->second = as_array(interleaved_part(both, heads, 0));
        arrays["attn_gate." + kind] = as_array(interleaved_part(both, heads, 1));
    }
    return arrays;
}

// The names of a split Qwen q_proj put back: q_proj.* holds the query and the gate, interleaved.
StateDictNames qwen_names(StateDictNames names, std::size_t heads) {
    StateDictNames merged;
    for (StateDictEntry& entry : names) {
        if (entry.name.rfind("attn_gate.", 0) == 0) continue;
        if (entry.name == "q_proj.weight" || entry.name == "q_proj.bias") {
            entry.parts.push_back(entry.name == "q_proj.weight" ? Part::Gate : Part::BiasGate);
            entry.shape[0] *= 2;
            entry.heads = heads;
        }
        merged.push_back(std::move(entry));
    }
    return merged;
}

// The first array of each naming mha reads; under a prefix they give its attention modules.
const std::vector<std::string> attention_markers = {
    "in_proj_weight", "q_proj_weight", "W_q.weight",    "w_q.weight",
    "W_qkv.weight",   "w_qkv.weight",  "q_proj.weight", "c_attn.weight", "qkv.weight"};

// "'a', 'b', 'c' and 2 more": at most `shown` names.
std::string some_names(const std::vector<std::string>& names, std::size_t shown) {
    std::string text;
    for (std::size_t i = 0; i < names.size() && i < shown; ++i) {
        text += (i == 0 ? "" : ", ") + std::string("'") + names[i] + "'";
    }
    if (names.size() > shown) text += " and " + std::to_string(names.size() - shown) + " more";
    return text;
}

// No naming matched: the prefixes under which one does (the option that strips one), or else
// the names found and the names expected.
std::string unknown_layout(const Arrays& arrays, const std::string& source,
                           const std::string& applied_prefix) {
    std::vector<std::string> prefixes = prefixes_of(arrays, attention_markers);
    for (std::string& prefix : prefixes) prefix = applied_prefix + prefix;
    if (prefixes.size() == 1) {
        return source + ": the attention arrays carry the prefix '" + prefixes[0] +
               "'; add --weights-prefix " + prefixes[0] + " to read the arrays under it";
    }
    if (!prefixes.empty()) {
        return source + ": " + std::to_string(prefixes.size()) + " attention modules, under " +
               some_names(prefixes, 3) + "; choose one with --weights-prefix " + prefixes[0];
    }
    std::vector<std::string> names;
    for (const auto& entry : arrays) names.push_back(entry.first);
    return source + ": not a state dict mha knows; found " + some_names(names, 4) +
           "; expected nn.MultiheadAttention's in_proj_weight and out_proj.weight, W_q/W_k/W_v/W_o "
           "(.weight, .bias), W_qkv and W_o, Hugging Face's q_proj/k_proj/v_proj/o_proj, "
           "GPT-2's c_attn/c_proj, or timm's qkv/proj";
}

}  // namespace

void split_packed(const Tensor& weight, const Tensor& bias, std::size_t E, Weights& w) {
    w.w_q = part_of(weight, 0, E);
    w.w_k = part_of(weight, 1, E);
    w.w_v = part_of(weight, 2, E);
    w.b_q = part_of(bias, 0, E);
    w.b_k = part_of(bias, 1, E);
    w.b_v = part_of(bias, 2, E);
}

std::vector<std::string> prefixes_of(const Arrays& arrays,
                                     const std::vector<std::string>& markers) {
    std::vector<std::string> prefixes;
    for (const auto& entry : arrays) {
        const std::string& name = entry.first;
        for (const std::string& marker : markers) {
            const std::size_t cut = name.size() - marker.size();
            if (name.size() > marker.size() && name.compare(cut, marker.size(), marker) == 0 &&
                name[cut - 1] == '.') {
                prefixes.push_back(name.substr(0, cut));
                break;
            }
        }
    }
    return prefixes;
}

Arrays under_prefix(Arrays arrays, const std::string& prefix, const std::string& source,
                    const std::vector<std::string>& markers) {
    Arrays kept;
    for (auto& [name, array] : arrays) {
        if (name.size() > prefix.size() && name.rfind(prefix, 0) == 0)
            kept.emplace(name.substr(prefix.size()), std::move(array));
    }
    if (kept.empty()) {
        const std::vector<std::string> prefixes = prefixes_of(arrays, markers);
        throw Error(source + ": no array name starts with --weights-prefix '" + prefix + "'" +
                    (prefixes.empty()
                         ? ""
                         : "; the attention modules are under " + some_names(prefixes, 3)));
    }
    return kept;
}

namespace {

// Every array of `dict` read into `w`: refuses the rest, and hands out how each was read.
Weights finished(const StateDict& dict, Weights w, StateDictNames* names) {
    dict.reject_leftovers();
    if (names != nullptr) *names = dict.names();
    return w;
}

}  // namespace

Weights weights_from_state_dict(const Arrays& arrays, const std::string& source,
                                const std::string& applied_prefix, StateDictNames* names,
                                std::optional<std::size_t> heads) {
    const auto o_proj = arrays.count("out_proj.weight") ? "out_proj.weight" : "o_proj.weight";
    if (arrays.count("q_proj.weight") && arrays.count(o_proj) && !arrays.count("attn_gate.weight") &&
        arrays.at("q_proj.weight").shape.size() == 2 && arrays.at(o_proj).shape.size() == 2 &&
        arrays.at("q_proj.weight").shape[0] == 2 * arrays.at(o_proj).shape[1]) {
        Weights w = weights_from_state_dict(split_qwen_gate(arrays, heads.value_or(0), source),
                                            source, applied_prefix, names);
        if (names != nullptr) *names = qwen_names(std::move(*names), *heads);
        return w;
    }
    Weights w;
    if (arrays.count("in_proj_weight") || arrays.count("q_proj_weight")) {
        StateDict dict(arrays, source, torch_layout);
        w = dict.has("in_proj_weight") ? torch_packed(dict, source) : torch_separate(dict, source);
        take_qk_norm(dict, arrays, w);
        take_gate(dict, arrays, w);
        return finished(dict, std::move(w), names);
    }
    for (const std::string prefix : {"W_", "w_"}) {
        if (arrays.count(prefix + "q.weight") || arrays.count(prefix + "qkv.weight")) {
            StateDict dict(arrays, source,
                           "a from-scratch module: " + prefix + "q, " + prefix + "k, " + prefix +
                               "v (or " + prefix + "qkv) and " + prefix +
                               "o, each .weight with optional .bias");
            w = scratch(dict, {prefix + "q.", prefix + "k.", prefix + "v.", prefix + "o.",
                               prefix + "qkv."});
            take_qk_norm(dict, arrays, w);
            take_gate(dict, arrays, w);
            return finished(dict, std::move(w), names);
        }
    }
    if (arrays.count("q_proj.weight")) {
        // Hugging Face (Llama, Mistral, Qwen, BART, OPT, Whisper): o_proj or out_proj
        const std::string out = arrays.count("out_proj.weight") ? "out_proj." : "o_proj.";
        StateDict dict(arrays, source,
                       "Hugging Face attention: q_proj, k_proj, v_proj and " +
                           out.substr(0, out.size() - 1) + ", each .weight with optional .bias");
        w = scratch(dict, {"q_proj.", "k_proj.", "v_proj.", out, ""});
        take_qk_norm(dict, arrays, w);
        take_gate(dict, arrays, w);
        return finished(dict, std::move(w), names);
    }
    if (arrays.count("qkv.weight")) {
        // timm's ViT Attention: qkv (3E, E) packs [Q; K; V] as in_proj_weight does, proj is W_o
        StateDict dict(arrays, source, timm_layout);
        w = scratch(dict, {"", "", "", "proj.", "qkv."});
        return finished(dict, std::move(w), names);
    }
    if (arrays.count("c_attn.weight")) {
        StateDict dict(arrays, source, gpt2_layout);
        w = gpt2(dict);
        return finished(dict, std::move(w), names);
    }
    throw Error(unknown_layout(arrays, source, applied_prefix));
}

std::optional<std::size_t> take_num_heads(Arrays& arrays, const std::string& source) {
    const auto found = arrays.find("num_heads");
    if (found == arrays.end()) return std::nullopt;
    const npy::Array& entry = found->second;
    const bool integer = entry.kind == 'i' || entry.kind == 'u';
    if (!integer || entry.values.size() != 1 || entry.values[0] < 1 ||
        entry.values[0] > double(std::uint32_t(-1))) {
        throw Error(source +
                    ": num_heads must be one positive integer (np.savez(..., "
                    "num_heads=4)), got " +
                    entry.dtype_name() + " of shape " + to_string(entry.shape));
    }
    const auto heads = static_cast<std::size_t>(entry.values[0]);
    arrays.erase(found);
    return heads;
}

namespace {

const char* const mla_hf_layout =
    "DeepSeek-V2 MLA: q_proj.weight (h·(d_h + d_R), E), kv_a_proj_with_mqa.weight "
    "(d_c + d_R, E), kv_a_layernorm.weight (d_c), kv_b_proj.weight (h·(d_h + d_v), d_c), "
    "o_proj.weight (E, h·d_v)";
const char* const mla_scratch_layout =
    "from-scratch MLA: W_q.weight (h·(d_h + d_R), E), W_dkv.weight (d_c, E), W_kr.weight "
    "(d_R, E), kv_norm.weight (d_c), W_uk.weight (h·d_h, d_c), W_uv.weight (h·d_v, d_c), "
    "W_o.weight (E, h·d_v)";

// Throws for the first of `names` the dict lacks, naming the layout it belongs to.
void require(const StateDict& dict, std::initializer_list<const char*> names,
             const std::string& source, const char* layout) {
    for (const char* name : names) {
        if (!dict.has(name)) {
            throw Error(source + ": missing array '" + name + "' (" + layout + ")");
        }
    }
}

// Rows of a (rows, cols) matrix: `count` rows from `first`, appended to `out`.
void append_rows(const Tensor& m, std::size_t first, std::size_t count, std::vector<float>& out) {
    const std::size_t cols = m.size(1);
    out.insert(out.end(), m.data() + first * cols, m.data() + (first + count) * cols);
}

// The sizes an MLA state dict implies, refused when h does not split it.
std::size_t per_head(std::size_t rows, std::size_t heads, const std::string& source,
                     const char* name) {
    if (heads == 0 || rows % heads != 0) {
        throw Error(source + ": array '" + name + "' has " + std::to_string(rows) +
                    " rows, not a whole number per head for h = " + std::to_string(heads));
    }
    return rows / heads;
}

MlaWeights mla_hugging_face(StateDict& dict, const std::string& source) {
    require(dict,
            {"q_proj.weight", "kv_a_proj_with_mqa.weight", "kv_a_layernorm.weight",
             "kv_b_proj.weight", "o_proj.weight"},
            source, mla_hf_layout);
    const std::size_t E = dict.nonzero(dict.cols_of("q_proj.weight"), "E", "q_proj.weight");
    const std::size_t kv_a = dict.rows_of("kv_a_proj_with_mqa.weight");
    const std::size_t d_c =
        dict.nonzero(dict.cols_of("kv_b_proj.weight"), "d_c", "kv_b_proj.weight");
    MlaWeights w;
    w.w_q = dict.take("q_proj.weight", {dict.rows_of("q_proj.weight"), E});
    w.w_kv_a = dict.take("kv_a_proj_with_mqa.weight", {kv_a, E});
    w.kv_norm = dict.take("kv_a_layernorm.weight", {d_c});
    w.w_kv_b = dict.take("kv_b_proj.weight", {dict.rows_of("kv_b_proj.weight"), d_c});
    w.w_o = dict.take("o_proj.weight", {E, dict.cols_of("o_proj.weight")});
    return w;
}

MlaWeights mla_from_scratch(StateDict& dict, const std::string& source, std::size_t heads) {
    require(dict,
            {"W_q.weight", "W_dkv.weight", "W_kr.weight", "kv_norm.weight", "W_uk.weight",
             "W_uv.weight", "W_o.weight"},
            source, mla_scratch_layout);
    const std::size_t E = dict.nonzero(dict.cols_of("W_q.weight"), "E", "W_q.weight");
    const std::size_t d_c = dict.nonzero(dict.rows_of("W_dkv.weight"), "d_c", "W_dkv.weight");
    const std::size_t d_R = dict.nonzero(dict.rows_of("W_kr.weight"), "d_R", "W_kr.weight");
    const std::size_t d_h = per_head(dict.rows_of("W_uk.weight"), heads, source, "W_uk.weight");
    const std::size_t d_v = per_head(dict.rows_of("W_uv.weight"), heads, source, "W_uv.weight");
    MlaWeights w;
    w.w_q = dict.take("W_q.weight", {dict.rows_of("W_q.weight"), E});
    std::vector<float> kv_a;  // [W_dkv; W_kr]: kv_a_proj_with_mqa
    append_rows(dict.take("W_dkv.weight", {d_c, E}), 0, d_c, kv_a);
    append_rows(dict.take("W_kr.weight", {d_R, E}), 0, d_R, kv_a);
    w.w_kv_a = Tensor({d_c + d_R, E}, std::move(kv_a));
    w.kv_norm = dict.take("kv_norm.weight", {d_c});
    const Tensor w_uk = dict.take("W_uk.weight", {heads * d_h, d_c});
    const Tensor w_uv = dict.take("W_uv.weight", {heads * d_v, d_c});
    std::vector<float> kv_b;  // per head [W_uk rows; W_uv rows]: kv_b_proj
    for (std::size_t i = 0; i < heads; ++i) {
        append_rows(w_uk, i * d_h, d_h, kv_b);
        append_rows(w_uv, i * d_v, d_v, kv_b);
    }
    w.w_kv_b = Tensor({heads * (d_h + d_v), d_c}, std::move(kv_b));
    w.w_o = dict.take("W_o.weight", {E, heads * d_v});
    return w;
}

}  // namespace

MlaNames mla_names_of(const Arrays& arrays) {
    return arrays.count("W_dkv.weight") != 0 ? MlaNames::Scratch : MlaNames::HuggingFace;
}

MlaWeights mla_weights_from_state_dict(const Arrays& arrays, const std::string& source,
                                       std::size_t heads) {
    const bool scratch = mla_names_of(arrays) == MlaNames::Scratch;
    StateDict dict(arrays, source, scratch ? mla_scratch_layout : mla_hf_layout);
    MlaWeights w = scratch ? mla_from_scratch(dict, source, heads) : mla_hugging_face(dict, source);
    dict.reject_leftovers();
    return w;
}

std::vector<std::pair<std::string, Tensor>> mla_state_dict_arrays(const MlaWeights& t,
                                                                  MlaNames names, std::size_t heads,
                                                                  const std::string& prefix) {
    if (names == MlaNames::HuggingFace) {
        return {{prefix + "q_proj.weight", t.w_q},
                {prefix + "kv_a_proj_with_mqa.weight", t.w_kv_a},
                {prefix + "kv_a_layernorm.weight", t.kv_norm},
                {prefix + "kv_b_proj.weight", t.w_kv_b},
                {prefix + "o_proj.weight", t.w_o}};
    }
    const MlaSizes m = mla_sizes(t, heads);
    const std::size_t E = m.d_model, d_c = m.d_latent, d_h = m.d_nope, d_v = m.d_v;
    std::vector<float> w_dkv, w_kr, w_uk, w_uv;  // kv_a_proj_with_mqa's and kv_b_proj's rows
    append_rows(t.w_kv_a, 0, d_c, w_dkv);
    append_rows(t.w_kv_a, d_c, m.d_rope, w_kr);
    for (std::size_t i = 0; i < heads; ++i) {
        append_rows(t.w_kv_b, i * (d_h + d_v), d_h, w_uk);
        append_rows(t.w_kv_b, i * (d_h + d_v) + d_h, d_v, w_uv);
    }
    return {{prefix + "W_q.weight", t.w_q},
            {prefix + "W_dkv.weight", Tensor({d_c, E}, std::move(w_dkv))},
            {prefix + "W_kr.weight", Tensor({m.d_rope, E}, std::move(w_kr))},
            {prefix + "kv_norm.weight", t.kv_norm},
            {prefix + "W_uk.weight", Tensor({heads * d_h, d_c}, std::move(w_uk))},
            {prefix + "W_uv.weight", Tensor({heads * d_v, d_c}, std::move(w_uv))},
            {prefix + "W_o.weight", t.w_o}};
}

LoadedMla load_mla_arrays(const std::string& path, const Ledger& ledger) {
    LoadedMla loaded;
    loaded.arrays = npy::read_npz(path, ledger);
    loaded.num_heads = take_num_heads(loaded.arrays, path);
    return loaded;
}

LoadedWeights load_weights(const std::string& path, const Ledger& ledger,
                           const std::string& prefix, std::optional<std::size_t> heads) {
    Arrays arrays = npy::read_npz(path, ledger);
    LoadedWeights loaded;
    loaded.num_heads = take_num_heads(arrays, path);
    if (!prefix.empty()) arrays = under_prefix(std::move(arrays), prefix, path, attention_markers);
    loaded.weights = weights_from_state_dict(arrays, path, prefix, &loaded.names,
                                             heads ? heads : loaded.num_heads);
    loaded.conv1d = arrays.count("c_attn.weight") != 0;
    return loaded;
}

namespace {

// The array `entry` describes, made of the tensors of `w`: the parts stacked along dim 0
// ((rows, cols) each, or (rows)), transposed when the file stored (in, out), in its shape.
Tensor array_of(const Weights& w, const StateDictEntry& entry) {
    std::vector<float> values;
    std::size_t rows = 0;
    const std::size_t heads = std::max<std::size_t>(entry.heads, 1);  // interleaved: h blocks
    for (std::size_t i = 0; i < heads; ++i) {
        for (const WeightPart part : entry.parts) {
            const Tensor t = (w.*weight_member<Weights>(part)).contiguous();
            const std::size_t n = t.numel() / heads;
            values.insert(values.end(), t.data() + i * n, t.data() + (i + 1) * n);
            rows += t.dim() == 0 || i > 0 ? 0 : t.size(0);
        }
    }
    if (values.size() != element_count(entry.shape)) {
        throw Error("'" + entry.name + "' of shape " + to_string(entry.shape) + " cannot hold " +
                    std::to_string(values.size()) + " values");
    }
    if (!entry.transposed) return Tensor(entry.shape, std::move(values));
    const std::size_t cols = rows == 0 ? 0 : values.size() / rows;
    return Tensor({rows, cols}, std::move(values)).transpose(0, 1).contiguous();
}

}  // namespace

StateDictNames own_names(const Weights& w) {
    const std::size_t E = w.d_model();
    const Shape square{E, E};
    StateDictNames names;
    const auto add = [&](const std::string& name, std::vector<Part> parts, const Tensor& first,
                         Shape shape) {
        if (!first.empty()) names.push_back({name, std::move(parts), false, std::move(shape)});
    };
    if (w.w_q.shape() == square && w.w_k.shape() == square && w.w_v.shape() == square) {
        add("in_proj_weight", {Part::Q, Part::K, Part::V}, w.w_q, {3 * E, E});
        add("in_proj_bias", {Part::BiasQ, Part::BiasK, Part::BiasV}, w.b_q, {3 * E});
        add("bias_k", {Part::KvBiasK}, w.bias_k, {1, 1, E});
        add("bias_v", {Part::KvBiasV}, w.bias_v, {1, 1, E});
        add("out_proj.weight", {Part::O}, w.w_o, w.w_o.shape());
        add("out_proj.bias", {Part::BiasO}, w.b_o, w.b_o.shape());
    } else {
        const std::pair<const char*, Part> modules[] = {
            {"W_q", Part::Q}, {"W_k", Part::K}, {"W_v", Part::V}, {"W_o", Part::O}};
        const Part biases[] = {Part::BiasQ, Part::BiasK, Part::BiasV, Part::BiasO};
        for (std::size_t i = 0; i < 4; ++i) {
            const Tensor& weight = w.*weight_member<Weights>(modules[i].second);
            const Tensor& bias = w.*weight_member<Weights>(biases[i]);
            add(std::string(modules[i].first) + ".weight", {modules[i].second}, weight,
                weight.shape());
            add(std::string(modules[i].first) + ".bias", {biases[i]}, bias, bias.shape());
        }
    }
    add("q_norm.weight", {Part::QNorm}, w.q_norm, w.q_norm.shape());
    add("k_norm.weight", {Part::KNorm}, w.k_norm, w.k_norm.shape());
    add("attn_gate.weight", {Part::Gate}, w.w_g, w.w_g.shape());
    add("attn_gate.bias", {Part::BiasGate}, w.b_g, w.b_g.shape());
    return names;
}

std::vector<std::pair<std::string, Tensor>> state_dict_arrays(const Weights& tensors,
                                                              const StateDictNames& names,
                                                              const std::string& prefix) {
    std::vector<std::pair<std::string, Tensor>> arrays;
    for (const StateDictEntry& entry : names)
        arrays.emplace_back(prefix + entry.name, array_of(tensors, entry));
    return arrays;
}

}  // namespace mha
