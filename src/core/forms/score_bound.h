#pragma once
// Whether a pass could stop on a projection or score beyond float32 (the check in
// core/pass/attention.cpp), decided before it runs from the largest inputs and weights. The bound
// clears ordinary inputs at once; only a run it cannot clear needs computing before anything
// is printed, so that such a run prints its one error line and nothing else.

#include "core/forms/model.h"
#include "core/pass/attention.h"
#include "core/pass/mla.h"

namespace mha {

// The largest |value| of t (any strides), 0 for an empty tensor.
double largest_value(const Tensor& t);

// The largest |value| LayerNorm with gains gamma and shifts beta (d each) can give, whatever
// its input: |x_i - mean| <= sqrt(d·variance), so sqrt(d)·max|gamma| + max|beta|.
double layer_norm_bound(const Tensor& gamma, const Tensor& beta);

// Whether the pass of w with options may stop on overflow when no query input is larger than
// query_input in magnitude and no key input larger than key_input. False means it cannot:
// every |Q|, |K| after QK-norm and RoPE, and every d_k·max|q|·max|k| times step 7's factor,
// stays under a quarter of float32's largest value (room for float32's rounding).
bool may_overflow(const Weights& w, double query_input, double key_input,
                  const ForwardOptions& options);

// Whether a block around `attention`, over inputs no larger than `input` in magnitude, may
// pass float32 outside attention's scores: V and W_o (softmax mixes V, so the context is at
// most max|V|), the feed-forward (|GELU(u)| <= |u|) over a LayerNorm's output, and the
// residual stream. pre_norm: pre-LN (LayerNorm before each sublayer), else post-LN.
bool may_overflow(const BlockWeights& block, const Weights& attention, double input, bool pre_norm);

// The same for every layer of a model, each attending over its first LayerNorm's output, from
// the embeddings (token plus position) through the residual stream to the logits.
bool may_overflow(const Model& model);

// The same for the MLA form of h heads over inputs no larger than `input` in magnitude: its
// projections, the keys and queries of both forms (the latent is RMS-normalised) and scores.
bool may_overflow(const MlaWeights& w, std::size_t heads, double input);

}  // namespace mha
