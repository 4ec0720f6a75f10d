#pragma once
// --preset P --shapes-only --decode T: the whole model's KV cache at T, in float, int8 and
// int4 (KIVI's default groups), and the most sequences whose cache fits --max-memory.

#include <optional>

#include "app/cli/config.h"
#include "core/sizes.h"
#include "show/run_info.h"

namespace mha {

// The ledger for a preset's decode with one layer's sizes s; none for other runs.
std::optional<KvLedger> kv_ledger_of(const Config& config, const Sizes& sizes);

}  // namespace mha
