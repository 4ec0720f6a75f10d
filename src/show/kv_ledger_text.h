#pragma once
// The KV cache ledger in words and tables, for the text report and markdown's code block.

#include <string>
#include <vector>

#include "show/run_info.h"

namespace mha {

// "0-31", "0, 2, ..., 24", "5, 11, 17": a row's layers, runs and even steps folded.
std::string layer_list(const std::vector<std::size_t>& layers);

// The ledger's lines, each at most 80 columns where the numbers allow: a table of the kinds
// of layer (bytes a token and at T, float32, int8, int4) with the model's total, what local
// layers and MLA's latent keep, how int8 and int4 group, the paged table with its unused
// bytes, and the sequences --max-memory holds.
std::vector<std::string> kv_ledger_lines(const KvLedger& ledger);

}  // namespace mha
