#pragma once
// A PyTorch state dict saved as .npz -> Weights. Understands nn.MultiheadAttention's
// names, the names from-scratch modules use, Hugging Face's q_proj ... o_proj and GPT-2's
// c_attn and c_proj; anything else is an error that names the array and the shape expected.

#include "core/pass/attention.h"
#include "core/pass/mla.h"
#include "io/npy.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mha {

// `source` names the file in error messages; `applied_prefix`, the --weights-prefix already
// stripped from the names, goes back in front of any prefix the messages advise.
Weights weights_from_state_dict(const std::map<std::string, npy::Array>& arrays,
                                const std::string& source, const std::string& applied_prefix = "");

// A state dict does not record num_heads (a constructor argument), so an export script may
// save it beside the arrays: np.savez(..., num_heads=4). Removes that entry from `arrays`
// and returns it; throws mha::Error unless it is one positive integer.
std::optional<std::size_t> take_num_heads(std::map<std::string, npy::Array>& arrays,
                                          const std::string& source);

struct LoadedWeights {
    Weights weights;
    std::optional<std::size_t> num_heads;  // the file's num_heads entry, when it has one
    bool conv1d = false;  // GPT-2's c_attn and c_proj: stored (in, out), read transposed
};

// Refuses a file whose arrays need more than the ledger has left to load. A non-empty
// prefix (--weights-prefix) keeps only the arrays under it, with the prefix removed.
LoadedWeights load_weights(const std::string& path, const Ledger& ledger,
                           const std::string& prefix = "");

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

// The arrays of an MLA state dict and its num_heads entry (see take_num_heads).
struct LoadedMla {
    std::map<std::string, npy::Array> arrays;
    std::optional<std::size_t> num_heads;
};
LoadedMla load_mla_arrays(const std::string& path, const Ledger& ledger);

}  // namespace mha
