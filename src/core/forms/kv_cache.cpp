// Copying rows in and out of a sequence and its key/value cache.

#include "core/forms/kv_cache.h"

#include <algorithm>

#include "core/pass/describe.h"

namespace mha {

Tensor sequence_rows(const Tensor& x, std::size_t first, std::size_t count, Workspace* workspace) {
    const std::size_t B = x.size(0), T = x.size(1), E = x.size(2);
    if (x.dry()) return new_dry(workspace, {B, count, E});
    Tensor rows = new_uninitialised(workspace, {B, count, E});
    for (std::size_t b = 0; b < B; ++b) {
        const float* from = x.data() + (b * T + first) * E;
        std::copy(from, from + count * E, rows.data() + b * count * E);
    }
    return rows;
}

void put_rows(const Tensor& part, std::size_t first, Tensor& all) {
    if (any_dry(part, all)) return;
    const std::size_t B = all.size(0), T = all.size(1), E = all.size(2), c = part.size(1);
    for (std::size_t b = 0; b < B; ++b) {
        std::copy(part.data() + b * c * E, part.data() + (b + 1) * c * E,
                  all.data() + (b * T + first) * E);
    }
}

void keep_weight_rows(const Tensor& part, std::size_t first, Tensor& all) {
    if (part.empty() || all.empty() || any_dry(part, all)) return;
    const std::size_t units = all.size(0) * all.size(1), N = all.size(2), c = part.size(2),
                      m = part.size(3);
    for (std::size_t u = 0; u < units; ++u) {
        for (std::size_t r = 0; r < c; ++r) {
            const float* from = part.data() + (u * c + r) * m;
            std::copy(from, from + m, all.data() + (u * N + first + r) * N);
        }
    }
}

Step cached_attend_step(const Normaliser& normaliser, const std::string& scores, bool streamed,
                        const std::string& rows, const std::string& keys, std::uint64_t batch,
                        std::uint64_t heads, std::uint64_t read, std::uint64_t d_k) {
    Step step = streamed ? described(StepKind::Attend, 10, "attend", "context",
                                     "context = " + normaliser.applied(scores) +
                                         " @ V_cache, streamed",
                                     {"B", "h", rows, "d_k"}, macs_of({2, batch, heads, read, d_k}))
                         : described(StepKind::Softmax, 9, normaliser.name, "weights",
                                     "weights = " + normaliser.applied(scores),
                                     {"B", "h", rows, keys}, macs_of({batch, heads, read, d_k}));
    if (!streamed) step.facts.normaliser = &normaliser;
    return step;
}

}  // namespace mha
