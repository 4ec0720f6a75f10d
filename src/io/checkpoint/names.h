#pragma once
// The tensor names a family's safetensors files use, with the prefix the folder's files
// have ("", "transformer.", "model.", "language_model.model.", ...), and the shape each must
// have for the config.

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor/tensor.h"
#include "io/checkpoint/config.h"
#include "io/safetensors.h"

namespace mha::checkpoint {

struct Names {
    std::string embed;       // (V, E) the token embedding
    std::string positions;   // (context, E) GPT-2's wpe; empty for RoPE families
    std::string final_norm;  // its weight; the bias beside it for GPT-2
    std::string head;        // (V, E) the LM head: lm_head.weight, or the embedding when tied
    std::string layers;      // "h." or "model.layers.": the layers' prefix, then "L."
};

// The names in `folder` for config's family: the prefix is the one whose token embedding the
// folder holds. Throws mha::Error naming the names tried when none is there, or the LM head
// when an untied model has none.
Names names_in(const safetensors::Folder& folder, const Config& config);

// Every tensor a layer reads, as the file names it, with the shape the config gives it
// (Conv1D weights as GPT-2 stores them, (in, out)).
std::vector<std::pair<std::string, Shape>> layer_tensors(const Config& config, const Names& names,
                                                         std::size_t layer);

}  // namespace mha::checkpoint
