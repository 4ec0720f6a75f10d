#pragma once
// The backward's costs in words, for every printer: what the forward kept for it, its
// multiply-adds against the forward's, and the memory training the layer keeps.

#include <string>
#include <vector>

#include "show/run_info.h"

namespace mha {

// "kept for the backward: x 96 B, Q 96 B, K 96 B, V 96 B, P 72 B, O 96 B, concat 96 B
// (648 B)" as pieces a filled line never splits ("x 96 B,"); empty without --backward.
std::vector<std::string> kept_pieces(const RunInfo& info);

// The pieces joined by spaces.
std::string kept_text(const RunInfo& info);

// "backward 2.05x the forward's multiply-adds: 1,866 vs 912"; empty without --backward.
std::string backward_macs_text(const RunInfo& info);

// "training this layer at N = 8192 keeps 8.6 GiB of activations for the backward (P 8 GiB:
// --attention streaming keeps 1 MiB of row log-sum-exp instead)"; empty without --backward.
std::string training_memory_text(const RunInfo& info);

// The text as a sentence: its first letter upper-case, a full stop after it.
std::string sentence(const std::string& text);

}  // namespace mha
