#pragma once
// What a trained character model shows besides one layer's trace: its prediction of the
// next character, and every layer's heads at once (the "model view").

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "core/tensor/tensor.h"
#include "show/head_roles.h"
#include "show/weight_maps.h"

namespace mha {

struct Prediction {
    std::size_t token;
    double probability;
};

// How many next tokens a model's or a checkpoint's run lists.
inline constexpr std::size_t predictions_shown = 5;

// The `count` most likely next tokens after the last position of logits (1, N, V),
// most likely first: softmax of the last row.
std::vector<Prediction> top_predictions(const Tensor& logits, std::size_t count);

// "'e'" for a character, "' '" for the space, "<unknown>" for token 0.
std::string character_name(std::uint32_t code);

// "next character: 'e' 41.2%  ' ' 20.1%  ..." with vocab (V) the code point per token.
void print_prediction(std::ostream& out, const std::vector<Prediction>& predictions,
                      const std::vector<std::uint32_t>& vocab);

// The heads of every layer, batch 0, titled "layer L head H": weights per layer (1, h, N, N);
// heads chooses the same heads in each layer (empty: all), mean the mean over heads instead.
// The model's causal mask marks each map's blocked keys (j > i).
std::vector<WeightMap> model_maps(const std::vector<Tensor>& weights,
                                  const std::vector<std::size_t>& heads, bool mean);

// The maps of one layer, titled "layer L head H", with the causal mask's blocked keys.
std::vector<WeightMap> layer_maps(const Tensor& weights, std::size_t layer,
                                  const std::vector<std::size_t>& heads, bool mean);

// What a model run (--model, --checkpoint) shows besides the traced layer, for a page that
// draws it whole.
struct ModelView {
    std::string prediction_title;      // "Next character", "Next token"
    std::string maps_title;            // "Every layer's heads", "Layer 1's heads"
    std::vector<WeightMap> maps;       // the chosen heads, "layer L head H"
    std::vector<std::string> labels;   // (N) each position and its character or token
    std::vector<std::string> caption;  // the maps' title, the text, the model
    std::string prediction;            // the prediction's lines, as the terminal has them
    std::vector<std::vector<HeadRoles>> roles;  // per layer, each head's roles on the text
    bool ranked_roles = false;         // the roles ranked by their strongest score (checkpoints)
};

}  // namespace mha
