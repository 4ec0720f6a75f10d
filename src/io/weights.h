#pragma once
// A PyTorch state dict saved as .npz -> Weights. Understands nn.MultiheadAttention's
// names, the names from-scratch modules use, Hugging Face's q_proj ... o_proj, GPT-2's
// c_attn and c_proj and timm's qkv and proj; anything else is an error that names the array and the shape expected.

#include "core/pass/attention.h"
#include "core/pass/mla.h"
#include "io/npy.h"

#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mha {

// A tensor of Weights: the parts a state-dict array holds.
enum class WeightPart {
    Q, K, V, O, BiasQ, BiasK, BiasV, BiasO, KvBiasK, KvBiasV, QNorm, KNorm, Gate, BiasGate
};

// The member that holds `part` in Weights, or in a struct with the same names
// (core/reference.h's DoubleWeights): w.*weight_member<Weights>(WeightPart::Q) is w.w_q.
template <typename W>
auto weight_member(WeightPart part) {
    using Member = decltype(&W::w_q);
    // in WeightPart's order
    static constexpr Member members[] = {
        &W::w_q, &W::w_k, &W::w_v, &W::w_o, &W::b_q, &W::b_k, &W::b_v, &W::b_o, &W::bias_k,
        &W::bias_v, &W::q_norm, &W::k_norm, &W::w_g, &W::b_g,
    };
    static_assert(std::size(members) == std::size_t(WeightPart::BiasGate) + 1);
    return members[std::size_t(part)];
}

// One array of a state dict as the loader read it: its name in the file, the Weights tensors
// it held stacked along dim 0 (in_proj_weight: W_q; W_k; W_v), whether it was stored
// transposed (GPT-2's Conv1D, (in, out)) and its shape in the file (bias_k: (1, 1, E)).
struct StateDictEntry {
    std::string name;
    std::vector<WeightPart> parts;
    bool transposed = false;
    Shape shape;
    std::size_t heads = 0;  // > 0: the parts interleaved head by head, not stacked (Qwen's gated
                            //  q_proj: each head's rows are its query rows, then its gate rows)
};
using StateDictNames = std::vector<StateDictEntry>;  // in the order the loader read them

// `source` names the file in error messages; `applied_prefix`, the --weights-prefix already
// stripped from the names, goes back in front of any prefix the messages advise. `names`,
// when given, receives how each array was read (without the prefix). The output gate is
// attn_gate.weight (and .bias) in every naming; a Hugging Face q_proj with twice o_proj's
// input rows is Qwen3-Next's gated query, each head's rows [query; gate], split with `heads`.
Weights weights_from_state_dict(const std::map<std::string, npy::Array>& arrays,
                                const std::string& source, const std::string& applied_prefix = "",
                                StateDictNames* names = nullptr,
                                std::optional<std::size_t> heads = std::nullopt);

// The names mha gives weights it made itself (seeded): nn.MultiheadAttention's
// (in_proj_weight, in_proj_bias, out_proj.weight, out_proj.bias, bias_k, bias_v) when W_q, W_k
// and W_v are all (d_model, d_model), else the from-scratch W_q.weight ... W_o.bias, which
// hold the other widths (GQA, --head-dim); q_norm.weight and k_norm.weight with QK-norm.
StateDictNames own_names(const Weights& weights);

// Tensors in the Weights' layout (e.g. gradients) as the arrays `names` describe: stacked,
// transposed and shaped as the file held them, each named prefix + its name.
std::vector<std::pair<std::string, Tensor>> state_dict_arrays(const Weights& tensors,
                                                              const StateDictNames& names,
                                                              const std::string& prefix);

// A state dict does not record num_heads (a constructor argument), so an export script may
// save it beside the arrays: np.savez(..., num_heads=4). Removes that entry from `arrays`
// and returns it; throws mha::Error unless it is one positive integer.
std::optional<std::size_t> take_num_heads(std::map<std::string, npy::Array>& arrays,
                                          const std::string& source);

struct LoadedWeights {
    Weights weights;
    StateDictNames names;                  // how each array was read (without --weights-prefix)
    std::optional<std::size_t> num_heads;  // the file's num_heads entry, when it has one
    bool conv1d = false;  // GPT-2's c_attn and c_proj: stored (in, out), read transposed
};

// Refuses a file whose arrays need more than the ledger has left to load. A non-empty
// prefix (--weights-prefix) keeps only the arrays under it, with the prefix removed.
// `heads` (--heads, else the file's num_heads) splits a gated Qwen q_proj.
LoadedWeights load_weights(const std::string& path, const Ledger& ledger,
                           const std::string& prefix = "",
                           std::optional<std::size_t> heads = std::nullopt);

// W_q, W_k, W_v and b_q, b_k, b_v of `w` from a packed [W_q; W_k; W_v] (3E, ...) weight and
// its (3E) bias (or none), each part a copy.
void split_packed(const Tensor& weight, const Tensor& bias, std::size_t E, Weights& w);

// The prefixes under which a name ends with one of `markers` after a '.': "attn." for
// "attn.in_proj_weight" and the marker "in_proj_weight"; one per matching array, in order.
std::vector<std::string> prefixes_of(const std::map<std::string, npy::Array>& arrays,
                                     const std::vector<std::string>& markers);

// The arrays whose names start with `prefix`, renamed without it; throws mha::Error when
// there are none, naming the prefixes that `markers` find (see prefixes_of).
std::map<std::string, npy::Array> under_prefix(std::map<std::string, npy::Array> arrays,
                                               const std::string& prefix, const std::string& source,
                                               const std::vector<std::string>& markers);

// An MLA state dict (--form mla) with h heads, in Hugging Face DeepSeek-V2 names (q_proj,
// kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj, o_proj; .weight each) or from-scratch names
// (W_q, W_dkv (d_c, E), W_kr (d_R, E), kv_norm, W_uk (h·d_h, d_c), W_uv (h·d_v, d_c), W_o),
// which are stacked into the Hugging Face layout. Throws naming a missing or misshapen array.
MlaWeights mla_weights_from_state_dict(const std::map<std::string, npy::Array>& arrays,
                                       const std::string& source, std::size_t heads);

// How an MLA state dict names its arrays: Hugging Face DeepSeek-V2's (mha's own names for
// seeded MLA weights too) or the from-scratch ones (W_dkv.weight present).
enum class MlaNames { HuggingFace, Scratch };
MlaNames mla_names_of(const std::map<std::string, npy::Array>& arrays);

// Tensors in MlaWeights' layout (e.g. gradients) as the arrays of a state dict with these names
// and h heads, each named prefix + its name: from-scratch names split kv_a_proj_with_mqa into
// W_dkv and W_kr, and kv_b_proj's per-head rows into W_uk and W_uv.
std::vector<std::pair<std::string, Tensor>> mla_state_dict_arrays(const MlaWeights& tensors,
                                                                  MlaNames names, std::size_t heads,
                                                                  const std::string& prefix);

// The arrays of an MLA state dict and its num_heads entry (see take_num_heads).
struct LoadedMla {
    std::map<std::string, npy::Array> arrays;
    std::optional<std::size_t> num_heads;
};
LoadedMla load_mla_arrays(const std::string& path, const Ledger& ledger);

}  // namespace mha
