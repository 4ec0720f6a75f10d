#pragma once
// A transformer block's state dict (.npz) -> attention Weights + BlockWeights.
// Two namings: nn.TransformerEncoderLayer's (self_attn.*, linear1, linear2, norm1, norm2)
// and a typical from-scratch block's (attn.*, ffn.0, ffn.2 of an nn.Sequential, ln1, ln2).
// The attention part may use any naming io/weights.h knows.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/forms/block.h"
#include "core/pass/attention.h"
#include "io/npy.h"
#include "io/weights.h"

namespace mha {

// The two namings of a block's own arrays: nn.TransformerEncoderLayer's (norm1, norm2,
// linear1, linear2; attention under self_attn.) and the from-scratch one (ln1, ln2, ffn.0,
// ffn.2; attention under attn.).
enum class BlockNaming { Torch, Scratch };

struct BlockState {
    Weights attention;
    BlockWeights block;
    std::optional<std::size_t> num_heads;  // the file's num_heads entry (io/weights.h)
    BlockNaming naming = BlockNaming::Torch;
    StateDictNames attention_names;  // how attention's arrays were read, each with its prefix
                                     //  (self_attn.in_proj_weight, ...)
};

// Takes the arrays by value: each becomes a tensor and is freed as it is taken.
// `applied_prefix`, the --weights-prefix already stripped from the names, goes back in front
// of any prefix the messages advise.
BlockState block_from_state_dict(std::map<std::string, npy::Array> arrays,
                                 const std::string& source, const std::string& applied_prefix = "");

// The names mha gives a block it made itself (seeded): nn.TransformerEncoderLayer's, so
// attention's are own_names(attention) under self_attn.
StateDictNames own_block_attention_names(const Weights& attention);

// The block's own tensors (e.g. gradients) named as `naming` names them, each prefix + its
// name: norm1.weight, norm1.bias, norm2.weight, norm2.bias, linear1.weight, linear1.bias,
// linear2.weight, linear2.bias (or ln1, ln2, ffn.0, ffn.2).
std::vector<std::pair<std::string, Tensor>> block_arrays(const BlockWeights& tensors,
                                                         BlockNaming naming,
                                                         const std::string& prefix);

// Refuses a file whose arrays need more than the ledger has left to load.
// A non-empty prefix (--weights-prefix) keeps only the arrays under it, renamed without it.
BlockState load_block(const std::string& path, const Ledger& ledger,
                      const std::string& prefix = "");

}  // namespace mha
