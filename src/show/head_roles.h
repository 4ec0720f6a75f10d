#pragma once
// What each head of a character model does on a text, as four scores: the mean weight
// its queries put on the keys a known role names (examples/models/README.md):
//   previous   queries i >= 1: key i-1
//   first      queries i >= 1: key 0
//   same       queries whose token occurred before: every earlier key with that token
//   induction  queries i whose last two tokens t[i-1] t[i] occurred before as t[j-1] t[j],
//              j < i: every such key j+1, the token that followed them then

#include <cstddef>
#include <ostream>
#include <vector>

#include "core/tensor.h"

namespace mha {

struct HeadRoles {
    double previous, first, same, induction;  // NaN when no query of the text qualifies
};

// weights (1, h, N, N) of one layer, tokens (N): one HeadRoles per head.
std::vector<HeadRoles> head_roles(const Tensor& weights, const std::vector<std::size_t>& tokens);

// A table, one row per layer and head; the largest score of each row is its "role".
void print_head_roles(std::ostream& out, const std::vector<std::vector<HeadRoles>>& layers);

}  // namespace mha
