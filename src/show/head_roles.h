#pragma once
// What each head of a character model does on a text, as four scores: the mean weight
// its queries put on the keys a known role names (examples/models/README.md):
//   previous   queries i >= 1: key i-1
//   first      queries i >= 1: key 0
//   same       queries whose character occurred before: every earlier key with it
//   induction  queries i whose last two characters t[i-1] t[i] occurred before as
//              t[j-1] t[j], j < i: every such key j+1, the character that followed them then
// Characters, not token ids, are compared: two characters outside the vocabulary share the
// unknown token but are no repeat.

#include <cstddef>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor/tensor.h"

namespace mha {

struct HeadRoles {
    double previous, first, same, induction;  // NaN when no query of the text qualifies
};

// weights (1, h, N, N) of one layer, characters (N) as UTF-8: one HeadRoles per head.
std::vector<HeadRoles> head_roles(const Tensor& weights,
                                  const std::vector<std::string>& characters);

// The role with the largest score ("previous", ..., "induction"), or "" when none qualifies.
std::string strongest_role(const HeadRoles& roles);

// A score as the tables print it: "0.796", or "-" when no query of the text qualifies.
std::string role_score(double value);

// Every head as (layer, head): in layer order, or ranked by its strongest score, highest
// first (a real model's induction or previous-token heads at the top).
std::vector<std::pair<std::size_t, std::size_t>> head_order(
    const std::vector<std::vector<HeadRoles>>& layers, bool ranked);

// A table, one row per layer and head; the largest score of each row is its "role".
void print_head_roles(std::ostream& out, const std::vector<std::vector<HeadRoles>>& layers);

// The same rows ranked: the head with the highest strongest score first (a real model's
// induction or previous-token heads at the top).
void print_ranked_head_roles(std::ostream& out,
                             const std::vector<std::vector<HeadRoles>>& layers);

}  // namespace mha
