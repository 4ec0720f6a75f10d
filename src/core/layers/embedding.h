#pragma once
// Learned token and position embeddings (nn.Embedding twice, summed) and their adjoint: the
// gradient of each row scattered back to the table row it was read from, in a fixed order.

#include <cstddef>
#include <vector>

#include "core/tensor/tensor.h"
#include "core/tensor/workspace.h"

namespace mha {

// x[b, n] = token_embedding[tokens[b·N + n]] + position_embedding[n]: (B, N, E), where
// tokens holds B·N token ids (< V) row by row, token_embedding is (V, E) and
// position_embedding (context ≥ N, E). Throws mha::Error when a token is not below V or the
// rows do not fit the context. x from the workspace when there is one; shape-only when a table
// is dry.
Tensor embed(const Tensor& token_embedding, const Tensor& position_embedding,
             const std::vector<std::size_t>& tokens, std::size_t batch,
             Workspace* workspace = nullptr);

// x[0, n] = token_embedding[tokens[n]] · scale: (1, N, E), the embeddings of a model whose
// positions come from RoPE (no position table); the product in float32, as Gemma's
// normaliser multiplies, and a plain copy when scale is 1. Throws mha::Error when a token is
// not below token_embedding's rows; shape-only when the table is dry.
Tensor embed_scaled(const Tensor& token_embedding, const std::vector<std::size_t>& tokens,
                    float scale, Workspace* workspace = nullptr);

struct EmbeddingGrads {
    Tensor token;     // (V, E) ∂L/∂token_embedding: rows of tokens never read stay 0
    Tensor position;  // (context, E) ∂L/∂position_embedding: rows n ≥ N stay 0
};

// The adjoint of embed given dx (B, N, E): d token_embedding[t] = Σ over the positions that
// read t, d position_embedding[n] = Σ_b dx[b, n]. Each column is summed in double, positions
// in order (b, then n); columns are split over `threads`, so every thread count gives the
// same bits. Throws as embed does, or when dx does not hold one row per token. The gradients
// from the workspace when there is one; shape-only when dx is dry.
EmbeddingGrads embed_backward(const Tensor& dx, const std::vector<std::size_t>& tokens,
                              std::size_t vocab, std::size_t context, std::size_t threads,
                              Workspace* workspace = nullptr);

}  // namespace mha
