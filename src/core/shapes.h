#pragma once
// --shapes-only: the 14 steps of forward() with every shape, stride, copy and
// multiply-add worked out from the sizes alone. Nothing is computed and no tensor
// is allocated (Step::value is null), so GPT-3's attention layer traces instantly.

#include <cstdint>

#include "core/attention.h"
#include "core/step.h"

namespace mha {

struct ShapeRun {
    Sizes sizes;
    bool self_attention = true;
    bool bias = true;
    bool causal = false;
};

// Parameters of the four projections: W_q, W_o (d_model, d_model), W_k (G·d_k, kdim),
// W_v (G·d_k, vdim), and their biases when there are any.
std::uint64_t parameter_count(const Sizes& sizes, bool bias);

// Reports steps 0-14 as forward() would for these sizes; returns the total multiply-adds.
std::uint64_t trace_shapes(const ShapeRun& run, Tracer& tracer);

}  // namespace mha
