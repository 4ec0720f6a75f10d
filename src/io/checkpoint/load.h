#pragma once
// A Hugging Face model folder opened as the pass's model: config.json and the safetensors
// headers checked against each other first, then only what the run needs read, when it is
// needed (a layer's weights at its turn, the prompt's embedding rows, the LM head in chunks).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/forms/model.h"
#include "core/forms/speculate.h"
#include "io/checkpoint/config.h"
#include "io/checkpoint/names.h"
#include "io/ledger.h"
#include "io/safetensors.h"

namespace mha::checkpoint {

struct Checkpoint {
    Config config;
    safetensors::Folder folder;
    Names names;
};

// DIR/config.json and DIR's safetensors headers, every tensor the model reads checked to be
// there with the shape config.json gives it; no tensor data is read. Throws mha::Error naming
// a missing tensor, or one whose shape disagrees with the config (and the keys that set it).
Checkpoint open_checkpoint(const std::string& dir, const Ledger& ledger);

// Bytes layer `layer`'s weights take while it is read: float32, with GPT-2's transposed copies.
std::uint64_t layer_bytes(const Checkpoint& checkpoint, std::size_t layer);

// Layer `layer` read now, mapped onto the pass: its weights in PyTorch's (out, in) layout
// (GPT-2's Conv1D transposed, c_attn split into q, k, v), Gemma's (1 + w) norms as weights, the
// family's block style and the layer's RoPE, scale, soft-cap and window.
ModelLayer read_layer(const Checkpoint& checkpoint, std::size_t layer, const Ledger& ledger);

// What the whole run keeps: the embedding rows of the distinct tokens (token_embedding row i is
// token `distinct[i]`), GPT-2's first N position rows, the final norm; the head a shape only.
// `rows` are the tokens as rows of that table. The ledger holds what is read.
struct Prompt {
    Model model;
    std::vector<std::size_t> rows;
};
Prompt read_prompt(const Checkpoint& checkpoint, const std::vector<std::size_t>& tokens,
                   Ledger& ledger);

// The layers and the LM head (head_chunk rows at a time) read from the checkpoint as the
// forward reaches them, each within the ledger as it is then; the checkpoint and ledger must
// outlive the source.
ModelSource checkpoint_source(const Checkpoint& checkpoint, std::size_t head_chunk,
                              const Ledger& ledger);

// The checkpoint as early exits for a draft's greedy acceptance: each forward reads its tokens'
// embedding rows (and GPT-2's positions), its first layers one at a time and the head
// head_chunk rows at a time, within a copy of the ledger as it is then, and lets them go when
// it returns. The checkpoint and ledger must outlive the exits.
EarlyExits early_exits(const Checkpoint& checkpoint, std::size_t head_chunk,
                       const Ledger& ledger, std::size_t threads);

// The same run as shapes only (a dry run), from the config alone: read_layer's layer, the
// prompt of n tokens (rows 0..n-1) and a source of such layers. Nothing is read.
ModelLayer dry_layer(const Config& config, std::size_t layer);
Prompt dry_prompt(const Config& config, std::size_t n);
ModelSource dry_source(const Config& config);

}  // namespace mha::checkpoint
