#pragma once
// Speculative verification: the last K of T decoded tokens are a draft, checked in one pass of
// K queries against the cache instead of K decoding steps. The draft is a tree (Medusa,
// EAGLE): draft token i hangs from parents[i], an earlier draft token or -1 for the last
// cached token, and sits at position P + depth(i) (P = T − K cached tokens). Token i sees the
// P cached keys, its ancestors and itself: the tree mask. A chain (-1, 0, 1, ...) is the
// causal mask over the draft. Each draft row equals, to the bit, decoding its branch (the
// prefix, then the tokens from the root down to it) token by token.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/pass/attention.h"

namespace mha {

// The draft's shape: parents[i] < i is draft token i's parent, -1 for the last cached token.
using DraftTree = std::vector<std::ptrdiff_t>;

// A chain of k draft tokens, -1, 0, 1, ..., k − 2: each token the next one's parent.
DraftTree draft_chain(std::size_t k);

// Each draft token's depth: 0 for a child of the last cached token, its parent's + 1 else.
// Throws mha::Error when a parent is below -1, the token itself or a later one.
std::vector<std::size_t> draft_depths(const DraftTree& tree);

// The tree mask: row i, of prefix + K columns, true where draft token i may attend (the
// prefix, its ancestors, itself).
std::vector<std::vector<bool>> tree_mask(const DraftTree& tree, std::size_t prefix);

// x: inputs.x_q (B, T, d_model), self-attention, its last K = tree.size() rows the draft
// (1 <= K <= T); masks and options as decode() takes them. Rows [0, T − K) are decoded token
// by token (decode()), rows [T − K, T) verified in one pass. Returns the T output rows
// (B, T, d_model) and the weights (B, h, T, T): a draft row's columns are the prefix's and
// the draft tokens' cache positions, zero where the tree mask blocks. Throws mha::Error
// otherwise.
ForwardResult verify_draft(const Weights& weights, const Inputs& inputs, const Masks& masks,
                           const ForwardOptions& options, const DraftTree& tree,
                           Tracer& tracer);

}  // namespace mha
