#pragma once
// The notes of --kv-quant's steps: how a cache tensor is grouped and coded, what the cache
// holds against float, and how far each step moved from the run over the float cache.

#include <string>
#include <vector>

#include "core/pass/step.h"

namespace mha {

// Appends the notes of the step's kv_quant and quant_error facts (nothing without them).
void kv_quant_notes(const Step& step, std::vector<std::string>& notes);

}  // namespace mha
