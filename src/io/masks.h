#pragma once
// Mask files -> the additive masks of step 8, with a note saying how each was read.

#include "core/pass/attention.h"
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
// Both loaders refuse a file that needs more than the ledger has left to load.
// Returns true when the mask looks written the other way round: a bool or integer mask
// read as Block that blocks every query's own key (the diagonal of a square mask) or
// every key of some query, as a 1 = keep mask does under PyTorch's reading.
bool load_attn_mask(const std::string& path, MaskMeaning meaning, const Ledger& ledger,
                    Masks& masks);

// Whether an additive mask (..., N, M) blocks (-inf) its whole diagonal when N = M, or
// a whole row of one of its (N, M) matrices.
bool blocks_diagonal_or_a_row(const Tensor& additive);
// key_padding_mask (B, M) from a .npy file: True / non-zero = ignore that key.
void load_key_padding_mask(const std::string& path, const Ledger& ledger, Masks& masks);

// A 4-D attn_mask as tutorials and scaled_dot_product_attention write it, broadcast over
// (B, h, N, M): (1, 1, N, M) -> (N, M), (B, 1, N, M) -> (B, N, M), (B, h, N, M) and
// (1, h, N, M) -> (B·h, N, M). Other ranks pass through (checked later); throws mha::Error
// when the leading sizes do not broadcast.
Tensor broadcast_attn_mask(const Tensor& mask, std::size_t batch, std::size_t heads);

// An unbatched input's key_padding_mask (M) -> (1, M); other ranks pass through.
Tensor unbatched_key_padding(const Tensor& padding);

}  // namespace mha
