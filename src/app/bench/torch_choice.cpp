// The fastest of PyTorch's forms and settings, by median.

#include "app/bench/torch_choice.h"

#include "core/error.h"
#include "show/format.h"
#include "show/text_layout.h"

namespace mha {

TorchBest fastest_torch(const std::vector<TorchCandidate>& candidates) {
    if (candidates.empty()) throw Error("bench: PyTorch gave no form to time");
    TorchBest best;
    for (std::size_t i = 0; i < candidates.size(); ++i) {
        const Spread ms = spread_of(candidates[i].times);
        if (i == 0 || ms.median < best.ms.median)
            best = {candidates[i].setting, candidates[i].form, ms};
    }
    return best;
}

const char* const torch_header = "  torch ms  t min ms  t max ms  t/blas      form  vs torch";

std::string torch_cells(const TorchBest& best, double mha_ms) {
    return padded_left(fixed(best.ms.median, 2), 10) + padded_left(fixed(best.ms.min, 2), 10) +
           padded_left(fixed(best.ms.max, 2), 10) + padded_left(best.setting, 8) +
           padded_left(best.form, 10) + padded_left(fixed(best.ms.median / mha_ms, 2) + "x", 10);
}

std::string torch_json(const TorchBest& best, double mha_ms) {
    return ",\"torch_ms\":" + fixed(best.ms.median, 4) + ",\"torch_ms_min\":" +
           fixed(best.ms.min, 4) + ",\"torch_ms_max\":" + fixed(best.ms.max, 4) +
           ",\"torch_threads_blas\":\"" + best.setting + "\",\"torch_form\":\"" + best.form +
           "\",\"vs_torch\":" + fixed(best.ms.median / mha_ms, 3);
}

}  // namespace mha
