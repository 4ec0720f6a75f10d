// Steps 6-10 on one (batch, head) unit at a time, the units split over threads.

#include "core/pass/units.h"

#include <cstdint>
#include <vector>

#include "core/kernels/streaming.h"
#include "core/ops/masks.h"
#include "core/ops/ops.h"
#include "core/ops/softcap.h"
#include "core/pass/score_guard.h"
#include "core/pass/score_rules.h"
#include "core/position/position_bias.h"
#include "core/threads/parallel.h"

namespace mha {

namespace {

// 6: (N, d_k) x (d_k, M) -> (N, M); `skip` may leave blocked keys' scores unwritten
void unit_scores(const AttentionUnit& u, const GemmSkip& skip = {}) {
    gemm(u.q, u.k.transposed(), u.scores, u.k.rows, false, skip);
}

// 7: keep the scores' variance near 1 whatever d_k is; then the soft-cap, if any
void unit_scale(const AttentionUnit& u, float factor) {
    if (factor != 1.0f) scale(u.scores, u.mask.n * u.mask.m, factor);
    const double cap = u.mask.masks->softcap;
    if (cap > 0.0) softcap(u.scores, u.mask.n * u.mask.m, cap);
}

// 8: blocked keys get -inf, float masks and ALiBi's bias are added
void unit_mask_scores(const AttentionUnit& u) {
    const HeadMask& mask = u.mask;
    const Masks& rules = *mask.masks;
    const ScoreBlock grid{u.scores, mask.n, mask.m, mask.m, mask.m - mask.n, 0};
    if (mask.attn != nullptr) add_mask(u.scores, mask.attn, mask.n * mask.m);
    if (mask.padding != nullptr) add_key_padding(u.scores, mask.padding, mask.n, mask.m);
    if (mask.alibi_slope != 0.0) add_alibi(grid, mask.alibi_slope);
    if (rules.causal) apply_causal(u.scores, mask.n, mask.m, rules.causal_align);
    if (rules.window > 0) apply_window(grid, {rules.window, rules.sinks});
}

// 9: each query's scores become weights over the M keys (step 8 is done: the unit's view of
// no mask at all)
std::size_t unit_normalise(const AttentionUnit& u, const UnitMath& math) {
    static const Masks unmasked;
    const HeadMask none{&unmasked, nullptr, nullptr, u.mask.n, u.mask.m};
    return normaliser_of(*u.mask.masks).fast(u.scores, 1.0f, none, math.zero_masked_rows);
}

// 10: (N, M) x (M, d_k) -> (N, d_k); the causal rule's zero weights left out of the sums
void unit_context(const AttentionUnit& u) {
    const MatrixView weights{u.scores, u.mask.n, u.mask.m, u.mask.m, 1};
    gemm(weights, u.v, u.context, u.ldc, false, causal_skip(u.mask, GemmSkip::RowEnds));
}

// The steps that read q or the factor: 6, 7 and the steps that include them.
bool forms_scores(UnitStep step) {
    return step != UnitStep::Mask && step != UnitStep::Normalise && step != UnitStep::Context;
}

// Everything one unit does for `step`; returns its rows with every key blocked.
std::size_t run_unit(UnitStep step, const AttentionUnit& u, const UnitMath& math);

// run_unit, with the unit's q scaled first where q·k would overflow float32.
std::size_t run_unit_in_range(UnitStep step, const AttentionUnit& u, const UnitMath& math) {
    if (!forms_scores(step) || !needs_prescale(u, math.factor)) return run_unit(step, u, math);
    std::vector<float> scaled;
    return run_unit(step, with_scaled_q(u, math.factor, scaled), {1.0f, math.zero_masked_rows});
}

std::size_t run_unit(UnitStep step, const AttentionUnit& u, const UnitMath& math) {
    switch (step) {
        case UnitStep::Scores:
            unit_scores(u);
            return 0;
        case UnitStep::Scale:
            unit_scale(u, math.factor);
            return 0;
        case UnitStep::Mask:
            unit_mask_scores(u);
            return 0;
        case UnitStep::Normalise:
            return unit_normalise(u, math);
        case UnitStep::ScaleMaskNormalise:
            return normaliser_of(*u.mask.masks)
                .fast(u.scores, math.factor, u.mask, math.zero_masked_rows);
        case UnitStep::Context:
            unit_context(u);
            return 0;
        case UnitStep::Attend: {  // the blocked keys' scores are never read: step 9 sets them
            unit_scores(u, causal_skip(u.mask, GemmSkip::OutputEnds));
            const std::size_t blocked = run_unit(UnitStep::ScaleMaskNormalise, u, math);
            unit_context(u);
            return blocked;
        }
        case UnitStep::Streamed:
            return attend_streaming(u.q, u.k, u.v, u.mask, math.factor, math.zero_masked_rows,
                                    u.context, u.ldc, u.lse);
    }
    return 0;
}

}  // namespace

std::size_t run_units(UnitStep step, const Units& units, const UnitMath& math,
                      std::size_t threads) {
    std::vector<std::size_t> blocked(units.count, 0);
    if (units.count > 0) {  // both products of every unit: no worker for a tiny problem
        const AttentionUnit first = units.unit(0);
        threads = threads_for(
            std::uint64_t(units.count) * first.mask.n * first.mask.m * 2 * first.q.cols, threads);
    }
    // every unit a range of its own, claimed by the next free thread
    parallel_ranges(units.count, units.count, threads, [&](std::size_t begin, std::size_t end) {
        for (std::size_t u = begin; u < end; ++u)
            blocked[u] = run_unit_in_range(step, units.unit(u), math);
    });
    std::size_t total = 0;
    for (std::size_t rows : blocked) total += rows;
    return total;
}

}  // namespace mha
