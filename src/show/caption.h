#pragma once
// What a picture or a hand-out says about the run it shows: the sizes in one line, and the
// caption of a figure (what it draws, the sentence, the sizes, where the weights came from).

#include "show/run_info.h"

#include <string>
#include <vector>

namespace mha {

// "B=1, N=4, M=6, d_model=16, h=2, d_k=8, self-attention, bias, causal"
std::string sizes_text(const RunInfo& info);

// what; "text: The cat sat" (with --text); "sizes: ..."; "weights: ..., inputs: ...".
std::vector<std::string> caption_lines(const RunInfo& info, const std::string& what);

}  // namespace mha
