#pragma once
// PyTorch's best in a comparison: of every form (module, composed) at every thread setting
// (torch threads / OpenBLAS threads), the one whose median time is smallest.

#include <string>
#include <vector>

#include "app/bench/timing.h"

namespace mha {

// One of PyTorch's candidates and the times it took.
struct TorchCandidate {
    std::string setting;        // "torch threads/OpenBLAS threads", e.g. "1/2"
    std::string form;           // "module" (nn.MultiheadAttention, the model's modules) or
                                // "composed" (the same maths from torch ops)
    std::vector<double> times;  // ms of each timed run
};

// The winner: its setting, form and spread.
struct TorchBest {
    std::string setting, form;
    Spread ms;
};

// The candidate with the smallest median, the first of equal ones; throws mha::Error when
// there is none.
TorchBest fastest_torch(const std::vector<TorchCandidate>& candidates);

// The table's columns for the winner beside mha's median: torch ms, t min ms, t max ms, t/blas,
// form, vs torch (torch ms / mha ms); torch_header is their heading.
extern const char* const torch_header;
std::string torch_cells(const TorchBest& best, double mha_ms);
// The same as JSON members, each after a comma.
std::string torch_json(const TorchBest& best, double mha_ms);

}  // namespace mha
