#pragma once
// A character model saved as .npz (examples/models/train.py writes them) -> Model, and
// text -> the model's tokens. Array names: token_embedding.weight, position_embedding.weight,
// layers.L.<nn.TransformerEncoderLayer's names>, norm.weight/.bias, lm_head.weight/.bias,
// plus vocab (V) int code points and heads (layers) int. Arrays named train.* (mha train's
// state to resume from, app/train/train_checkpoint.h) are left to the trainer.

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/forms/model.h"
#include "io/npy.h"

namespace mha {

inline constexpr const char* trainer_prefix = "train.";

Model model_from_arrays(const std::map<std::string, npy::Array>& arrays, const std::string& source);

// What --save writes of a model's run (--model, --checkpoint): logits (1, N, V), attn_weights
// (1, h, N, N) of `layer`, attn_weights.L of every layer and, when the run kept them,
// hidden.L (1, N, d_model) for L = 0..layers.
std::vector<std::pair<std::string, Tensor>> result_arrays(const ModelResult& result,
                                                          std::size_t layer);

// The model's tensors (e.g. gradients) as the arrays of its file, each prefix + its name, in
// train.py's state-dict order: token_embedding.weight, position_embedding.weight, every
// layer's layers.L.self_attn.in_proj_weight ... layers.L.norm2.bias
// (nn.TransformerEncoderLayer's names), norm.weight, norm.bias, lm_head.weight, lm_head.bias.
std::vector<std::pair<std::string, Tensor>> model_arrays(const Model& tensors,
                                                         const std::string& prefix);

// vocab (V) and heads (layers) as the int32 arrays of the file.
std::vector<std::pair<std::string, npy::Array>> model_integer_arrays(const Model& model);

// Refuses a file whose arrays need more than max_memory bytes to load.
Model load_model(const std::string& path, std::uint64_t max_memory);

struct ModelText {
    std::vector<std::size_t> tokens;      // (N) one per character
    std::vector<std::string> characters;  // (N) each character as UTF-8 (or the byte it was)
    std::size_t unknown = 0;              // characters outside the vocabulary (token 0)
};

// One token per UTF-8 character; a character outside the vocabulary, or a byte that is not
// valid UTF-8, becomes the unknown token. Throws mha::Error for an empty text or one longer
// than the model's context (one more when last_is_target: the last character is only
// predicted, never read).
ModelText encode_text(const std::string& text, const Model& model, bool last_is_target = false);

}  // namespace mha
