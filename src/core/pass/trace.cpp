// The trace a pass reports its steps to: each step's layout and values taken from its tensor.

#include "core/pass/trace.h"

#include <cmath>
#include <string>
#include <utility>

#include "core/checked.h"
#include "core/error.h"
#include "core/ops/ops.h"
#include "core/pass/describe.h"

namespace mha {

namespace {

// Whether step 8's grid of allowed keys is drawn: a mask, and small enough.
bool draws_grid(const Masks& masks, std::size_t n, std::size_t m) {
    return masks.any() && n <= max_grid && m <= max_grid;
}

// The first field in which two descriptions of one step differ, empty when none does.
std::string difference(const Step& a, const Step& b) {
    if (a.kind != b.kind) return "kind";
    if (a.operand != b.operand) return "operand";
    if (a.backward != b.backward) return "backward";
    if (a.number != b.number) return "number " + std::to_string(b.number);
    if (a.name != b.name) return "name " + b.name;
    if (a.tensor != b.tensor) return "tensor " + b.tensor;
    if (a.expression != b.expression) return "expression " + b.expression;
    if (a.einops != b.einops) return "einops " + b.einops;
    if (a.dims != b.dims) return "dims";
    if (a.macs != b.macs) return "macs " + std::to_string(b.macs);
    if (a.copied_bytes != b.copied_bytes) return "copied " + std::to_string(b.copied_bytes);
    return "";
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

PassTrace::PassTrace(Tracer& tracer, const PassSpec& spec)
    : tracer_(tracer),
      planned_(true),
      draw_grid_(draws_grid(spec.masks, spec.sizes.seq_len, spec.sizes.kv_len)) {
    if (tracer.enabled()) steps_ = plan_pass(spec);
}

PassTrace::PassTrace(Tracer& tracer, const ModelSpec& spec)
    : tracer_(tracer),
      planned_(true),
      draw_grid_(draws_grid(spec.layer.masks, spec.layer.sizes.seq_len, spec.layer.sizes.kv_len)) {
    if (tracer.enabled()) steps_ = plan_model(spec);
}

Step& PassTrace::next() {
    if (next_ >= steps_.size()) {
        throw Error("internal error: the pass reported step " + std::to_string(next_ + 1) +
                    " of a plan of " + std::to_string(steps_.size()));
    }
    return steps_[next_++];
}

void PassTrace::emit(const Tensor& value, Step step) {
    step.backward = backward_;
    if (planned_) {
        const Step& plan = next();
        const std::string field = difference(plan, step);
        const bool input = step.kind == StepKind::Input;  // an input keeps the layout it came with
        if (!field.empty() || value.shape() != plan.shape ||
            (!input && value.strides() != plan.strides)) {
            throw Error("internal error: step " + std::to_string(plan.number) + " " + plan.name +
                        " " + plan.tensor + " (" + plan.expression +
                        ") was described differently: " +
                        (field.empty() ? "layout " + to_string(value.shape()) : field));
        }
    }
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

void PassTrace::show(const Tensor& value) {
    if (!on()) return;
    Step& step = next();
    if (value.shape() != step.shape || value.strides() != step.strides) {
        throw Error("internal error: step " + std::to_string(step.number) + " " + step.name + " " +
                    step.tensor + " was planned as shape " + to_string(step.shape) + " strides " +
                    to_string(step.strides) + " but computed as shape " + to_string(value.shape()) +
                    " strides " + to_string(value.strides()));
    }
    step.value = value.dry() ? nullptr : &value;
    tracer_.on_step(step);
    step.value = nullptr;
}

void PassTrace::show_input(const Tensor& value) {
    if (!on()) return;
    Step& step = steps_.at(next_);
    step.strides = value.strides();
    step.contiguous = value.is_contiguous();
    show(value);
}

void PassTrace::show_masked(const Tensor& scores) {
    if (!on()) return;
    if (draw_grid_) {
        const MatrixView unit = head_matrix(scores, 0, 0);
        std::vector<std::vector<bool>> grid(unit.rows, std::vector<bool>(unit.cols));
        for (std::size_t i = 0; i < unit.rows; ++i) {
            for (std::size_t j = 0; j < unit.cols; ++j)
                grid[i][j] = !(std::isinf(unit(i, j)) && unit(i, j) < 0);
        }
        steps_.at(next_).allowed = std::move(grid);
    }
    show(scores);
}

void PassTrace::show_layout() {
    if (!on()) return;
    tracer_.on_step(next());
}

}  // namespace mha
