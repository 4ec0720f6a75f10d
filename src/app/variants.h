#pragma once
// Which form of the forward pass a run uses: the packed forward() (default),
// --fused-qkv, --per-head or --decode T, and the option rules that go with them.

#include <string>

#include "app/config.h"
#include "app/problem.h"
#include "core/attention.h"

namespace mha {

// Runs the form of the pass the configuration asks for.
ForwardResult run_pass(const Config& config, const Problem& problem, Tracer& tracer);

// "pre-LN block, d_ff=64", "fused QKV", ...; empty for the packed pass.
std::string variant_description(const Config& config, std::size_t d_ff);

// The form of the pass the configuration asks for (the block wraps the packed form).
Form form_of(const Config& config);

// After parsing: --decode T means N = T and causal; throws mha::Error for options
// that do not combine with the chosen variant.
void apply_variants(Config& config);

}  // namespace mha
