#pragma once
// A Hugging Face config.json read into what the pass needs for one model family: the sizes,
// the norm, the feed-forward, the attention's settings layer by layer, and a word on which key
// set each of them. A key that would change the maths and is not understood is refused.

#include <cstddef>
#include <string>
#include <vector>

#include "core/forms/block.h"
#include "core/position/rope.h"
#include "io/json.h"
#include "io/ledger.h"

namespace mha::checkpoint {

// The families read, by model_type (gemma3 is the image-text file: its text model, under
// text_config, is read as gemma3_text).
enum class Family { Gpt2, Llama, Mistral, Qwen2, Qwen3, Gemma2, Gemma3 };

// One layer's attention as the config sets it.
struct LayerConfig {
    std::size_t window = 0;     // W > 0: a sliding (local) layer
    Rope rope;                  // its base and scaling (not read for GPT-2)
    std::string rope_source;    // "rope_theta 500000, llama3 scaling, factor 32 (rope_scaling)"
    std::string window_source;  // "sliding_window 4: this layer is local (layer_types)"
};

struct Config {
    std::string file;        // the config.json read, for messages
    std::string model_type;  // as the file names it
    Family family = Family::Llama;
    bool multimodal = false;  // gemma3: the text model nested under text_config
    std::size_t vocab_size = 0, hidden_size = 0, intermediate_size = 0, layers = 0;
    std::size_t heads = 0, kv_heads = 0, head_dim = 0, max_positions = 0;
    NormKind norm = NormKind::Rms;
    double norm_eps = 1e-6;
    bool norm_plus_one = false;  // Gemma: RMSNorm scales by (1 + w)
    Activation activation = Activation::Silu;
    bool gated = true;      // SwiGLU / GeGLU; GPT-2's plain FFN otherwise
    bool sandwich = false;  // Gemma's post-attention and post-feed-forward norms
    bool qkv_bias = false, o_bias = false, mlp_bias = false;
    bool qk_norm = false;              // Qwen3, Gemma 3: RMSNorm of each head's q and k before RoPE
    bool tied = false;                 // the LM head is the token embedding
    bool rope = true;                  // false: GPT-2's learned position table
    float embedding_scale = 1.0f;      // Gemma: sqrt(hidden_size) in float32
    double query_pre_attn_scalar = 0;  // S > 0: scores / sqrt(S)
    double attn_softcap = 0, final_softcap = 0;
    std::vector<LayerConfig> layer;  // one per layer
    std::vector<std::string> keys;   // "key value: what it sets", in the order read
};

// config.json parsed from `text`, named `what` in errors. Throws mha::Error naming the file,
// the key and the byte for a model_type or rope_type not read, a value of the wrong kind or
// out of range, or a key whose maths is not done (scale_attn_by_inverse_layer_idx true, ...).
Config parse_config(const std::string& text, const std::string& what);

// The file at `path`, read within the ledger (its bytes and its parsed tree).
Config read_config(const std::string& path, const Ledger& ledger);

}  // namespace mha::checkpoint
