#pragma once
// Mask files -> the additive masks of step 8, with a note saying how each was read.

#include "core/attention.h"
#include "io/npy.h"

#include <cstdint>
#include <string>

namespace mha {

// How a bool or integer attn_mask is read.
enum class MaskMeaning {
    Block,  // True / non-zero = may NOT attend (nn.MultiheadAttention)
    Keep,   // 0 = blocked, non-zero = may attend (masked_fill(mask == 0, -inf) in tutorials)
};

// A float mask is added as it is (MaskMeaning::Keep is an error for it);
// a bool or integer one becomes 0 / -inf.
// `what` names the source in the note and in errors.
Tensor additive_mask(const npy::Array& mask, MaskMeaning meaning, const std::string& what,
                     std::string& note);

// attn_mask from a .npy file; shape is checked later against the problem's sizes.
// Both loaders refuse a file that needs more than max_memory bytes to load.
// Returns true when the mask looks written the other way round: a bool or integer mask
// read as Block that blocks every query's own key (the diagonal of a square mask) or
// every key of some query, as a 1 = keep mask does under PyTorch's reading.
bool load_attn_mask(const std::string& path, MaskMeaning meaning, std::uint64_t max_memory,
                    Masks& masks);

// Whether an additive mask (..., N, M) blocks (-inf) its whole diagonal when N = M, or
// a whole row of one of its (N, M) matrices.
bool blocks_diagonal_or_a_row(const Tensor& additive);
// key_padding_mask (B, M) from a .npy file: True / non-zero = ignore that key.
void load_key_padding_mask(const std::string& path, std::uint64_t max_memory, Masks& masks);

}  // namespace mha
