// Step 9's normalisers: the table and the rows' functions that live nowhere else.

#include "core/pass/score_rules.h"

#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/kernels/kernels.h"
#include "core/ops/ops.h"

namespace mha {

namespace {

// ---- softmax: p = exp(s − max) / Σ exp(s − max) -------------------------------------------

std::string softmax_applied(const std::string& scores) { return "softmax(" + scores + ")"; }

// Returns whether every entry was −inf: then p is NaN, as PyTorch gives, or zeros.
bool softmax_exact(const double* s, double* p, std::size_t m, bool zero_masked_rows) {
    if (m == 0) return false;
    const double inf = std::numeric_limits<double>::infinity();
    double max = -inf;
    for (std::size_t j = 0; j < m; ++j) max = std::max(max, s[j]);
    if (max == -inf) {
        const double fill = zero_masked_rows ? 0.0 : std::numeric_limits<double>::quiet_NaN();
        for (std::size_t j = 0; j < m; ++j) p[j] = fill;
        return true;
    }
    double sum = 0.0;
    for (std::size_t j = 0; j < m; ++j) sum += p[j] = std::exp(s[j] - max);
    for (std::size_t j = 0; j < m; ++j) p[j] /= sum;
    return false;
}

// dS = P ∘ (dP − D) on one row
void softmax_backward_row(const float* p, float* ds, std::size_t m, float d) {
    for (std::size_t j = 0; j < m; ++j) ds[j] = p[j] * (ds[j] - d);
}

const Normaliser normalisers[] = {
    {"softmax", "torch.softmax(scores, dim=-1)", softmax_applied,
     "dS = P * (dP - D.unsqueeze(-1))", true, true, scale_mask_softmax, softmax_rows,
     softmax_exact, softmax_backward_rowsum, softmax_backward_row},
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

// Its adjoint, the row-sum form: ds = p ∘ (dp − D), D = Σ_j dp_j p_j (a blocked key has p = 0,
// so its score gets no gradient; a zeroed row none at all).
void softmax_backward_rowsum(const double* p, const double* dp, double* ds, std::size_t m) {
    double rowsum = 0.0;
    for (std::size_t j = 0; j < m; ++j) rowsum += dp[j] * p[j];
    for (std::size_t j = 0; j < m; ++j) ds[j] = p[j] * (dp[j] - rowsum);
}

}  // namespace mha
