#pragma once
// Scores beyond float32: a unit whose q·k would pass FLT_MAX is found before its scores are
// formed, and formed as (q·factor) kᵀ where that keeps them in range, as PyTorch does.

#include <vector>

#include "core/pass/units.h"

namespace mha {

// Whether unit u must form its scores as (q·factor) kᵀ: true where some q·k would pass
// FLT_MAX in float32 (every partial sum of q·k is at most Σ_j |q_j k_j| ≤ d_k max|q| max|k|,
// a bound that clears almost every unit at once) while q·k·factor does not. Throws when a
// scaled score, or the sum of its scaled terms, passes FLT_MAX.
bool needs_prescale(const AttentionUnit& u, float factor);

// u with q·factor in `scaled` (N, d_k) in place of q.
AttentionUnit with_scaled_q(AttentionUnit u, float factor, std::vector<float>& scaled);

}  // namespace mha
