// The trace a pass reports its steps to: each step's layout and values taken from its tensor.

#include "core/pass/trace.h"

#include <cmath>
#include <utility>

#include "core/checked.h"
#include "core/ops/ops.h"
#include "core/pass/describe.h"

namespace mha {

namespace {

// Whether step 8's grid of allowed keys is drawn: a mask, and small enough.
bool draws_grid(const Masks& masks, std::size_t n, std::size_t m) {
    return masks.any() && n <= max_grid && m <= max_grid;
}

}  // namespace

void Tally::on_step(const Step& step) {
    ++steps;
    std::uint64_t& part = step.backward ? macs.backward : macs.forward;
    part = checked_sum({part, step.macs}, "the multiply-adds");
}

std::uint64_t Tally::total_macs() const {
    return checked_sum({macs.forward, macs.backward}, "the multiply-adds");
}

PassTrace::PassTrace(Tracer& tracer) : tracer_(tracer) {}

void PassTrace::emit(const Tensor& value, Step step) {
    step.backward = backward_;
    step.shape = value.shape();
    step.strides = value.strides();
    step.contiguous = value.is_contiguous();
    step.value = value.dry() ? nullptr : &value;
    tracer_.on_step(step);
}

std::vector<std::vector<bool>> PassTrace::grid_of(const Tensor& scores, const Masks& masks) const {
    const std::size_t n = scores.size(2), m = scores.size(3);
    if (!draws_grid(masks, n, m)) return {};
    if (scores.dry()) {
        if (!(masks.causal || masks.window > 0)) return {};
        return allowed_grid(masks, n, m);
    }
    const MatrixView unit = head_matrix(scores, 0, 0);
    std::vector<std::vector<bool>> grid(unit.rows, std::vector<bool>(unit.cols));
    for (std::size_t i = 0; i < unit.rows; ++i) {
        for (std::size_t j = 0; j < unit.cols; ++j)
            grid[i][j] = !(std::isinf(unit(i, j)) && unit(i, j) < 0);
    }
    return grid;
}

}  // namespace mha
