#pragma once
// A transformer block's state dict (.npz) -> attention Weights + BlockWeights.
// Two namings: nn.TransformerEncoderLayer's (self_attn.*, linear1, linear2, norm1, norm2)
// and a typical from-scratch block's (attn.*, ffn.0, ffn.2 of an nn.Sequential, ln1, ln2).
// The attention part may use any naming io/weights.h knows.

#include <map>
#include <optional>
#include <string>

#include "core/attention.h"
#include "core/block.h"
#include "io/npy.h"

namespace mha {

struct BlockState {
    Weights attention;
    BlockWeights block;
    std::optional<std::size_t> num_heads;  // the file's num_heads entry (io/weights.h)
};

BlockState block_from_state_dict(const std::map<std::string, npy::Array>& arrays,
                                 const std::string& source);

BlockState load_block(const std::string& path);

}  // namespace mha
