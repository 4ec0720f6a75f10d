#pragma once
// Which form of the forward pass a run uses: the packed forward() (default),
// --fused-qkv, --per-head or --decode T, and the option rules that go with them.

#include "app/config.h"
#include "core/attention.h"

namespace mha {

using ForwardFunction = ForwardResult (*)(const Weights&, const Inputs&, const Masks&,
                                          const ForwardOptions&, Tracer&);

ForwardFunction forward_for(const Config& config);

// After parsing: --decode T means N = T and causal; throws mha::Error for options
// that do not combine with the chosen variant.
void apply_variants(Config& config);

}  // namespace mha
