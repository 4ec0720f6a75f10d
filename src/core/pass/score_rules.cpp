// Step 9's normalisers: the table and the rows' functions that live nowhere else.

#include "core/pass/score_rules.h"

#include <cmath>

#include "core/error.h"
#include "core/kernels/kernels.h"

namespace mha {

namespace {

// ---- softmax: p = exp(s − max) / Σ exp(s − max) -------------------------------------------

std::string softmax_applied(const std::string& scores) { return "softmax(" + scores + ")"; }

// dS = P ∘ (dP − D) on one row
void softmax_backward_row(const float* p, float* ds, std::size_t m, float d) {
    for (std::size_t j = 0; j < m; ++j) ds[j] = p[j] * (ds[j] - d);
}

const Normaliser normalisers[] = {
    {"softmax", "torch.softmax(scores, dim=-1)", softmax_applied, "dS = P * (dP - D.unsqueeze(-1))",
     true, true, scale_mask_softmax, softmax_backward_row},
};

}  // namespace

const Normaliser& default_normaliser() { return normalisers[0]; }

const Normaliser& normaliser_of(const Masks& masks) {
    return masks.normaliser != nullptr ? *masks.normaliser : default_normaliser();
}

void require_streamed(const Masks& masks) {
    const Normaliser& row = normaliser_of(masks);
    if (!row.streams) {
        throw Error(std::string("the streaming path has no online ") + row.name +
                    ": it computes weights tile by tile with a running maximum and sum");
    }
}

float score_factor(double base, bool scaled) {
    return scaled ? float(1.0 / std::sqrt(base)) : 1.0f;
}

}  // namespace mha
