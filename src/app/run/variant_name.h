#pragma once
// The name a run's header gives the variant of the pass (the form, the block, a model's layer
// kind), from the configuration alone.

#include <cstddef>
#include <string>

#include "app/cli/config.h"

namespace mha {

// "pre-LN block, d_ff=64", "fused QKV", ...; empty for the packed pass.
std::string variant_description(const Config& config, std::size_t d_ff);

}  // namespace mha
