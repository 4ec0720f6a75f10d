#pragma once
// A transformer block's state dict (.npz) -> attention Weights + BlockWeights.
// Two namings: nn.TransformerEncoderLayer's (self_attn.*, linear1, linear2, norm1, norm2)
// and a typical from-scratch block's (attn.*, ffn.0, ffn.2 of an nn.Sequential, ln1, ln2).
// The attention part may use any naming io/weights.h knows.

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "core/forms/block.h"
#include "core/pass/attention.h"
#include "io/npy.h"

namespace mha {

struct BlockState {
    Weights attention;
    BlockWeights block;
    std::optional<std::size_t> num_heads;  // the file's num_heads entry (io/weights.h)
};

// Takes the arrays by value: each becomes a tensor and is freed as it is taken.
// `applied_prefix`, the --weights-prefix already stripped from the names, goes back in front
// of any prefix the messages advise.
BlockState block_from_state_dict(std::map<std::string, npy::Array> arrays,
                                 const std::string& source, const std::string& applied_prefix = "");

// Refuses a file whose arrays need more than the ledger has left to load.
// A non-empty prefix (--weights-prefix) keeps only the arrays under it, renamed without it.
BlockState load_block(const std::string& path, const Ledger& ledger,
                      const std::string& prefix = "");

}  // namespace mha
