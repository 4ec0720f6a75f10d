#pragma once
// The character model's backward (core/forms/model.h) for training: the mean cross-entropy of
// next-token prediction, and the gradient of every array of the model, untraced.

#include <cstddef>
#include <vector>

#include "core/forms/model.h"

namespace mha {

struct ModelBackward {
    ModelResult forward;  // the last block's output, the logits (B, N, V), every layer's P
    double loss = 0.0;    // the mean cross-entropy over the B·N positions (over mean_over's,
                          // for a micro-batch), in nats
    Model grads;          // ∂loss/∂ every array, each in its own shape (vocab and heads copied)
};

// The model on `batch` rows of tokens (B·N ids, row by row, N ≤ context, each < V) under a
// causal mask, F.cross_entropy of the logits against targets (B·N ids < V), and its backward:
//   logits = norm(x_L) W_headᵀ + b     dW_head, db, dx_final;  LNᵀ to dx_L
//   x_l+1 = block_l(x_l)               block_backward, l = L-1 ... 0
//   x_0 = token_emb[t] + pos_emb[n]    the rows scattered back (embed_backward)
// Every layer's forward keeps what its backward reads. Work runs on `threads` threads and
// every sum across units runs in a fixed order, so any thread count gives the same bits.
// Throws mha::Error when the tokens or targets do not fit the model. Untraced: the trainer's.
// With a workspace, the activations and their gradients come from its blocks: a trainer that
// keeps one across steps (and lets each step's result go before the next) maps and fills no
// fresh memory for them. The result's tensors may hold its blocks. With mean_over (not 0) the
// loss is the sum over these positions divided by mean_over, and so are its gradients: these
// rows are one micro-batch of a batch of mean_over positions, whose loss and gradients are
// the sums of its micro-batches'.
ModelBackward model_forward_backward(const Model& model, const std::vector<std::size_t>& tokens,
                                     const std::vector<std::size_t>& targets, std::size_t batch,
                                     std::size_t threads, Workspace* workspace = nullptr,
                                     std::size_t mean_over = 0);

// The same on one row of tokens, traced: the forward as forward_model traces it, then b23 ... b0, layer
// `traced_layer`'s backward step by step and each other layer's as one step. A model with dry
// arrays (a dry run) computes nothing, hands out no tensor storage and describes the same steps.
ModelBackward model_forward_backward(const Model& model, const std::vector<std::size_t>& tokens,
                                     const std::vector<std::size_t>& targets,
                                     std::size_t traced_layer, std::size_t threads, Tracer& tracer);

}  // namespace mha
