// The first non-finite value of a traced pass, found step by step.

#include "app/run/non_finite.h"

#include <cmath>

namespace mha {

namespace {

// "(0, 1, 2)": flat index `at` of a C-order tensor of `shape`.
std::string position(const Shape& shape, std::size_t at) {
    std::string text;
    for (std::size_t d = shape.size(); d-- > 0;) {
        text = std::to_string(at % shape[d]) + (text.empty() ? "" : ", ") + text;
        at /= shape[d];
    }
    return "(" + text + ")";
}

}  // namespace

void NonFiniteFinder::on_step(const Step& step) {
    if (!where.empty() || !step.value) return;
    const Tensor values = step.value->contiguous();
    const bool masked = step.kind == StepKind::Mask && !step.backward;
    for (std::size_t i = 0; i < values.numel(); ++i) {
        const float v = values.data()[i];
        if (std::isfinite(v) || (masked && v == -INFINITY)) continue;
        value = std::isnan(v) ? "NaN" : "infinity";
        where = std::string(step.backward ? "the gradient " : "the activation ") + step.tensor +
                " (step " + (step.backward ? "b" : "") + std::to_string(step.number) + ", " +
                step.name + ") at " + position(values.shape(), i);
        return;
    }
}

}  // namespace mha
