#pragma once
// --kv-quant and its options as the decode form takes them, checked against the sizes.

#include <cstdint>
#include <string>

#include "app/cli/config.h"
#include "core/forms/kv_quant.h"
#include "core/sizes.h"

namespace mha {

// The quantisation --kv-quant asks for; off (bits 0) without it.
KvQuant kv_quant_of(const Config& config);

// Throws mha::Error when a group along d_k does not divide it, a group along the tokens is
// longer than the cache, or --kv-residual is.
void check_kv_quant(const Config& config, const Sizes& sizes);

// Which of K and V `axis` groups, for messages: "K and V are", "K is" or "V is".
std::string operands_on(const KvQuant& quant, QuantAxis axis);

}  // namespace mha
