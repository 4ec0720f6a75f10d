// Splits a block's state dict into its attention part and the rest.

#include "io/block_weights.h"

#include "core/error.h"
#include "io/finite.h"
#include "io/weights.h"

#include <utility>

namespace mha {

namespace {

using Arrays = std::map<std::string, npy::Array>;

struct Naming {
    std::string attention;     // prefix of the attention module's arrays
    std::string norm1, norm2;  // module names
    std::string linear1, linear2;
};

const Naming torch_naming = {"self_attn.", "norm1", "norm2", "linear1", "linear2"};
const Naming scratch_naming = {"attn.", "ln1", "ln2", "ffn.0", "ffn.2"};

Tensor take(Arrays& rest, const std::string& name, const std::string& source,
            const Naming& naming) {
    const auto found = rest.find(name);
    if (found == rest.end()) {
        throw Error(source + ": missing array '" + name + "' (a block: " + naming.attention +
                    "*, " + naming.norm1 + ", " + naming.norm2 + ", " + naming.linear1 + ", " +
                    naming.linear2 + ", each .weight and .bias)");
    }
    const Tensor t = float_tensor(found->second, source + ": array '" + name + "'");
    for (const std::size_t size : found->second.shape) {
        if (size == 0) {
            throw Error(source + ": array '" + name + "' has shape " +
                        to_string(found->second.shape) +
                        ", a dimension of 0; every size must"
                        " be at least 1");
        }
    }
    rest.erase(found);
    return t;
}

// The first array of each block naming; under a prefix they name the blocks of a model.
const std::vector<std::string> block_markers = {"linear1.weight", "ffn.0.weight"};

}  // namespace

BlockState block_from_state_dict(Arrays arrays, const std::string& source,
                                 const std::string& applied_prefix) {
    const bool torch = arrays.count("linear1.weight") != 0;
    if (!torch && arrays.count("ffn.0.weight") == 0) {
        const std::vector<std::string> prefixes = prefixes_of(arrays, block_markers);
        throw Error(source +
                    ": not a transformer block's state dict; expected "
                    "nn.TransformerEncoderLayer's linear1/linear2/norm1/norm2/self_attn "
                    "or ffn.0/ffn.2/ln1/ln2/attn" +
                    (prefixes.empty()
                         ? std::string()
                         : "; a block is under '" + applied_prefix + prefixes[0] +
                               "': add --weights-prefix " + applied_prefix + prefixes[0]));
    }
    const Naming& n = torch ? torch_naming : scratch_naming;
    Arrays& rest = arrays;  // what take() leaves: the attention arrays
    BlockState state;
    state.naming = torch ? BlockNaming::Torch : BlockNaming::Scratch;
    BlockWeights& b = state.block;
    b.norm1_weight = take(rest, n.norm1 + ".weight", source, n);
    b.norm1_bias = take(rest, n.norm1 + ".bias", source, n);
    b.norm2_weight = take(rest, n.norm2 + ".weight", source, n);
    b.norm2_bias = take(rest, n.norm2 + ".bias", source, n);
    b.w_1 = take(rest, n.linear1 + ".weight", source, n);
    b.b_1 = take(rest, n.linear1 + ".bias", source, n);
    b.w_2 = take(rest, n.linear2 + ".weight", source, n);
    b.b_2 = take(rest, n.linear2 + ".bias", source, n);
    Arrays attention;
    for (auto& [name, array] : rest) {
        if (name.rfind(n.attention, 0) != 0) {
            throw Error(source + ": unexpected array '" + name + "' in a block's state dict");
        }
        attention.emplace(name.substr(n.attention.size()), std::move(array));
    }
    rest.clear();
    state.attention = weights_from_state_dict(attention, source + " (" + n.attention + "*)",
                                              applied_prefix + n.attention, &state.attention_names);
    for (StateDictEntry& entry : state.attention_names) entry.name = n.attention + entry.name;
    check_block(b, state.attention.d_model());
    return state;
}

StateDictNames own_block_attention_names(const Weights& attention) {
    StateDictNames names = own_names(attention);
    for (StateDictEntry& entry : names) entry.name = torch_naming.attention + entry.name;
    return names;
}

std::vector<std::pair<std::string, Tensor>> block_arrays(const BlockWeights& t, BlockNaming naming,
                                                         const std::string& prefix) {
    const Naming& n = naming == BlockNaming::Torch ? torch_naming : scratch_naming;
    return {
        {prefix + n.norm1 + ".weight", t.norm1_weight}, {prefix + n.norm1 + ".bias", t.norm1_bias},
        {prefix + n.norm2 + ".weight", t.norm2_weight}, {prefix + n.norm2 + ".bias", t.norm2_bias},
        {prefix + n.linear1 + ".weight", t.w_1},        {prefix + n.linear1 + ".bias", t.b_1},
        {prefix + n.linear2 + ".weight", t.w_2},        {prefix + n.linear2 + ".bias", t.b_2}};
}

BlockState load_block(const std::string& path, const Ledger& ledger, const std::string& prefix) {
    Arrays arrays = npy::read_npz(path, ledger);
    const std::optional<std::size_t> num_heads = take_num_heads(arrays, path);
    if (!prefix.empty()) arrays = under_prefix(std::move(arrays), prefix, path, block_markers);
    BlockState state = block_from_state_dict(std::move(arrays), path, prefix);
    state.num_heads = num_heads;
    return state;
}

}  // namespace mha
