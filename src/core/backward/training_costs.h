#pragma once
// What training costs: the tensors one layer's forward keeps for the backward (the inputs
// and Kept's, core/pass/attention.h, with P on the standard path or the row log-sum-exp on the
// streaming one), read off a run of the forward (a dry one needs no values), and a model's
// step in multiply-adds and its run's peak bytes, counted by dry runs.

#include <cstdint>
#include <string>
#include <vector>

#include "core/forms/model.h"
#include "core/pass/attention.h"

namespace mha {

// One tensor the backward reads from the forward.
struct KeptTensor {
    std::string name;               // "x", "Q", "P", "lse", ...; Q_raw, K_raw: before QK-norm
    std::vector<std::string> dims;  // a name from the shape legend for every dimension
    Shape shape;                    // one size per name in dims
    std::uint64_t bytes = 0;        // float32: 4 per element
};

// The tensors a backward reads from the forward that kept `kept` of `inputs` and computed the
// weights P (empty on the streaming path), in the order the forward makes them: the inputs (x,
// or x_q, x_k, x_v), Q and K before QK-norm (with QK-norm), Q, K, V (B, h, N, d_k),
// (B, G, M, d_k), (B, G, M, d_v), P (B, h, N, M) or its row log-sum-exp lse (B, h, N), the
// context O (B, h, N, d_v) and the concat (B, N, h·d_v). Throws mha::Error past 64 bits.
std::vector<KeptTensor> kept_tensors(const Inputs& inputs, const Kept& kept,
                                     const Tensor& weights);

// The bytes of all of them (throws mha::Error past 64 bits).
std::uint64_t kept_bytes(const std::vector<KeptTensor>& kept);

// Multiply-adds of one training step on `rows` rows of `context` tokens, forward and backward,
// as dry runs of `dry` (a model without values) count them: the model's run on one row (the
// embedding, layer 0 step by step, the head and the loss) shows each other layer as one step
// without its multiply-adds, so those come from a dry run of that layer's block; every count
// grows with the rows. Throws mha::Error past 64 bits.
std::uint64_t training_step_macs(const Model& dry, std::size_t context, std::size_t rows);

// The most bytes a model's run holds at once, as a dry run of `dry` counts them in a workspace
// that takes and lets go its blocks as a real one does (Workspace::dry_blocks): the forward of
// one row of tokens (every layer's attention weights kept, and with keep_hidden every layer's
// input), or the forward and backward of `rows` rows (everything each layer keeps, every
// gradient). Throws mha::Error past 64 bits.
std::uint64_t forward_peak_bytes(const Model& dry, const std::vector<std::size_t>& tokens,
                                 bool keep_hidden);
std::uint64_t forward_backward_peak_bytes(const Model& dry, const std::vector<std::size_t>& tokens,
                                          const std::vector<std::size_t>& targets,
                                          std::size_t rows);

}  // namespace mha
