#pragma once
// Step 9's normalisers as a table, one row each: how the fast kernels turn a row of masked
// scores into weights and back, and how the plan writes it (core/reference.cpp states softmax
// in plain loops). Masks names the row.

#include <cstddef>
#include <string>

#include "core/ops/masks.h"

namespace mha {

// One normaliser of step 9: a row of M masked scores s (a blocked key is −inf) -> weights p.
struct Normaliser {
    const char* name;   // step 9's name in the plan and its value on the command line
    const char* torch;  // step 9's PyTorch expression on the standard path: weights = <torch>
    // The function as the forms write it around their own scores: softmax(<scores>)
    std::string (*applied)(const std::string& scores);
    const char* backward;  // b9's PyTorch expression: dS = ...
    bool row_dot;          // b9 reads D = rowsum(dP ∘ P), planned and computed before it
    bool streams;          // the streaming path has its online form
    // Steps 7-9 fused on one head's (N, M) scores, row-major, by the fast kernels: weights in
    // place. Returns the rows with every key blocked.
    std::size_t (*fast)(float* scores, float factor, const HeadMask& mask, bool zero_masked_rows);
    // b9 on one float row of m: ds (m) holds dP and becomes dS; p (m) the weights; d the
    // row's D (read only with row_dot).
    void (*backward_row)(const float* p, float* ds, std::size_t m, float d);
};

// Softmax: the normaliser of a pass that names none.
const Normaliser& default_normaliser();

// The normaliser `masks` names: the default unless it names another.
const Normaliser& normaliser_of(const Masks& masks);

// Throws Error when the streaming path has no online form of the normaliser of `masks`.
void require_streamed(const Masks& masks);

// Step 7's factor: 1/sqrt(base), base = d_k or --scale-base S; 1 when the scores are not scaled.
float score_factor(double base, bool scaled);

}  // namespace mha
