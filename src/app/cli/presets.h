#pragma once
// The attention sizes of well-known models (--preset, --list-presets).
// docs/presets.md gives the source of every number.

#include "app/cli/config.h"

#include <cstddef>
#include <string>
#include <vector>

namespace mha {

struct Preset {
    std::string name;   // what --preset takes: "gpt2", "llama2-70b", ...
    std::string model;  // "GPT-2 small (124M)"
    std::size_t d_model;
    std::size_t heads;     // h
    std::size_t kv_heads;  // G, h unless the model shares key/value heads
    std::size_t context;   // N: the longest sequence the model was trained on
    std::size_t d_ff;      // width of the feed-forward network
    std::size_t layers;
    bool bias;                // whether the attention projections have biases
    double rope_theta = 0.0;  // > 0: RoPE (half layout, as the released checkpoints) with this base
    std::size_t window = 0;   // > 0: sliding-window attention of this width
    std::size_t mla_latent = 0;  // > 0: multi-head latent attention (--form mla) with this d_c
    std::size_t mla_rope = 0;    // and this d_R
    // Gemma 2: heads wider than d_model / h, the scale's base, the logit soft-cap, and a
    // sliding window on the local layers (the even-indexed ones; the odd ones are global).
    std::size_t head_dim = 0;      // > 0: d_k, the heads' width
    double scale_base = 0.0;       // > 0: step 7 divides by sqrt(this) (query_pre_attn_scalar)
    double softcap = 0.0;          // > 0: the attention logit soft-cap
    std::size_t local_window = 0;  // > 0: the window of the even-indexed (local) layers
};

const std::vector<Preset>& presets();

// The preset of that name, in any case ("GPT2" is gpt2). Throws mha::Error listing the
// names, and the nearest one when name looks like a typo of it.
const Preset& find_preset(const std::string& name);

// --list-presets: one line per preset, 80 columns.
std::string presets_table();

// Fills in what the preset decides and the command line left open (`given` lists the
// options that appeared): B = 1, N = the context, d_model, h, G, the bias, RoPE and its
// base, the sliding window, MLA (--form mla, unless another form was asked for) with its
// d_c and d_R, the head width, scale base and soft-cap, with --layer L the kind of layer L
// (local layers get the window), and with --block the feed-forward width. Throws for a
// --layer the preset does not have or whose layers are all alike.
void apply_preset(const Preset& preset, const std::vector<std::string>& given, Config& config);

}  // namespace mha
