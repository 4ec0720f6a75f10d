#pragma once
// The trace a pass reports its steps to. Each step is described where it is computed, in the
// one trace.show(value, describe) beside the line that computes it: `describe` returns the
// step's words and costs (core/pass/describe.h) and runs only when a tracer listens; the
// tensor gives the step its shape, strides and values (none in a dry run).

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/ops/masks.h"
#include "core/pass/step.h"
#include "core/tensor/tensor.h"

namespace mha {

// How a run's multiply-adds split between its forward and its backward (Step::backward).
struct MacSplit {
    std::uint64_t forward = 0, backward = 0;
};

// A tracer that keeps counts only: the steps shown and their multiply-adds. A dry run under it
// gives what --step counts and what the time budget is estimated from.
class Tally final : public Tracer {
public:
    void on_step(const Step& step) override;
    std::size_t steps = 0;
    MacSplit macs;
    std::uint64_t total_macs() const;  // throws mha::Error past 64 bits
};

class PassTrace {
public:
    explicit PassTrace(Tracer& tracer);

    bool on() const { return tracer_.enabled(); }

    // The step `describe()` returns, with value's layout (and values unless it is dry).
    template <class Describe>
    void show(const Tensor& value, Describe describe) {
        if (on()) emit_described(value, describe);
    }

    // Step 8: the masked scores (B, h, N, M), with the grid of keys batch 0's head 0 may see
    // when it is small enough to draw: read from the values, or in a dry run from the masks.
    template <class Describe>
    void show_masked(const Tensor& scores, const Masks& masks, Describe describe) {
        if (on()) emit_masked(scores, masks, describe);
    }

    // From here on the steps are the backward's.
    void begin_backward() { backward_ = true; }

private:
    // The words run only under a tracer (a dry run's tally too), so the two below are built
    // for size, apart from the code that computes: a step's strings, its Step and their
    // clean-up stay out of the pass's own functions.
    template <class Describe>
    [[gnu::cold, gnu::noinline]] void emit_described(const Tensor& value, Describe& describe) {
        emit(value, describe());
    }
    template <class Describe>
    [[gnu::cold, gnu::noinline]] void emit_masked(const Tensor& scores, const Masks& masks,
                                                 Describe& describe) {
        Step step = describe();
        step.allowed = grid_of(scores, masks);
        emit(scores, std::move(step));
    }

    void emit(const Tensor& value, Step step);
    std::vector<std::vector<bool>> grid_of(const Tensor& scores, const Masks& masks) const;

    Tracer& tracer_;
    bool backward_ = false;
};

}  // namespace mha
