#pragma once
// A language model: token (and position) embeddings, a stack of pre-norm transformer blocks,
// a final norm and a linear head to the vocabulary. Our character model, and the real
// checkpoints' families (io/checkpoint/) mapped onto the same pass with their styles.
//   x_0 = token_embedding[t] + position_embedding[0..N)     (1, N, d_model)
//         or token_embedding[t] · embedding_scale            (RoPE models: no position table)
//   x_l+1 = block_l(x_l)                                     pre-norm, causal self-attention
//   logits = norm(x_L) @ lm_head.T + lm_head_bias            (1, N, V), soft-capped or not

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "core/forms/block.h"
#include "core/pass/attention.h"
#include "core/pass/projection.h"
#include "core/tensor/workspace.h"

namespace mha {

// What one layer's attention adds to the plain causal pass: a checkpoint's settings for it.
struct LayerAttention {
    std::optional<Rope> rope;  // RoPE on Q and K after QK-norm; none: no rotation
    double scale_base = 0.0;   // S > 0: the scores divided by sqrt(S), not sqrt(d_k)
    double softcap = 0.0;      // C > 0: the scores soft-capped, C·tanh(scores / C)
    std::size_t window = 0;    // W > 0: a local layer, query p sees keys p − W < j ≤ p
    double qk_norm_eps = 1e-6;  // QK-norm's RMSNorm ε (with Weights::q_norm, k_norm)
};

struct ModelLayer {
    Weights attention;
    BlockWeights block;
    std::size_t heads;
    LayerAttention options;
};

struct Model {
    std::vector<std::uint32_t> vocab;  // (V) the Unicode code point of each token;
                                       //     token 0 is the unknown token (code point 0)
    Tensor token_embedding;            // (V, d_model)
    Tensor position_embedding;         // (context, d_model)
    std::vector<ModelLayer> layers;
    Tensor norm_weight, norm_bias;  // (d_model) each
    Tensor head_weight;             // (V, d_model); shape-only when read in chunks (ModelSource)
    Tensor head_bias;               // (V); empty without a bias
    // A checkpoint's (the defaults are the character model's):
    float embedding_scale = 1.0f;    // x_0 = token_embedding[t] · this (Gemma: sqrt(d_model))
    std::size_t max_positions = 0;   // the context without a position table
    NormKind final_norm = NormKind::Layer;
    double final_rms_eps = 1e-6;     // the final RMSNorm's ε
    double final_softcap = 0.0;      // C > 0: logits = C·tanh(logits / C)

    std::size_t d_model() const { return token_embedding.size(1); }
    std::size_t context() const {
        return position_embedding.empty() ? max_positions : position_embedding.size(0);
    }
    std::size_t vocab_size() const { return head_weight.size(0); }
    std::size_t parameter_count() const;
};

// Where the layers and the head come from when they are not all in memory (a checkpoint read
// a layer at a time): each is called when its turn comes, and what it returns is let go after.
struct ModelSource {
    std::size_t layers = 0;
    std::function<ModelLayer(std::size_t layer)> layer;
    std::size_t head_chunk = 0;  // rows of the head per call of head_rows
    std::function<Tensor(std::size_t first, std::size_t count)> head_rows;  // (count, d_model)
};

inline constexpr std::size_t unknown_token = 0;

// A model's weights packed once for the kernels in use (core/pass/projection.h), for forwards
// that repeat over the same weights (mha bench --checkpoint): every layer's attention and
// feed-forward, and the LM head. As large as those weights; they must not change while it is
// in use.
struct PackedLayer {
    PackedWeights attention;
    PackedFeedForward feed_forward;
};
struct PackedModel {
    std::vector<PackedLayer> layers;
    PackedLinear head;  // (V, d_model) packed
};
PackedModel pack_model(const std::vector<ModelLayer>& layers, const Tensor& head_weight);

// What a forward keeps besides the logits and the last block's output, and what it reuses.
struct ModelPass {
    bool keep_hidden = false;             // ModelResult::hidden
    bool every_layer_weights = true;      // false: only the traced layer's attention weights kept
                                          //  (the others freed as their layer ends)
    const PackedModel* packed = nullptr;  // the layers' and the head's weights packed once
                                          //  (pack_model); null: packed in every projection
    Workspace* workspace = nullptr;       // the tensors from it, so that a forward run again
                                          //  reuses the memory of the one before (a dry
                                          //  model: a dry one, which counts their peak); null
                                          //  or of the other kind: a workspace of its own
};

// The pass's options and masks for a layer: causal, with the layer's RoPE, scale, soft-cap and
// window; its tensors from `workspace` (none: new ones).
ForwardOptions layer_options(const ModelLayer& layer, std::size_t threads, Workspace* workspace);
Masks layer_masks(const ModelLayer& layer);

struct ModelResult {
    Tensor output;                // (1, N, d_model)  the last block's output
    Tensor logits;                // (1, N, V)  before the softmax
    std::vector<Tensor> weights;  // per layer: (1, h, N, N) attention weights; empty for a
                                  //  layer not kept (ModelPass::every_layer_weights)
    std::vector<Tensor> hidden;   // asked for: (1, N, d_model) the stream entering each layer,
                                  //  then the last layer's output (layers + 1 of them)
};

// Runs tokens (N ≤ context, each < V) through the model with a causal mask. The tracer
// sees the embedding (step 0), every layer (layer `traced_layer`'s block step by step,
// attention and all, each other one as one step), the final norm (22) and the head (23). A
// model with dry arrays (a dry run) computes nothing and describes the same steps.
ModelResult forward_model(const Model& model, const std::vector<std::size_t>& tokens,
                          std::size_t traced_layer, std::size_t threads, Tracer& tracer,
                          const ModelPass& pass = {});

// The same with the layers (model.layers unread) and, when source.head_rows is set, the head
// (model.head_weight only a shape) taken from `source` one at a time.
ModelResult forward_model(const Model& model, const ModelSource& source,
                          const std::vector<std::size_t>& tokens, std::size_t traced_layer,
                          std::size_t threads, Tracer& tracer, const ModelPass& pass = {});

}  // namespace mha
