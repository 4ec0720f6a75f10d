#pragma once
// The Step record the forward pass reports, and the Tracer that observes it.
// Nothing here prints: printers are Tracers that live in src/show/.

#include "core/tensor.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mha {

// One tensor produced by one numbered step of the forward pass. Steps that act
// on Q, K and V alike (4 view, 5 transpose) report one Step per tensor.
struct Step {
    int number = 0;                       // 0 for the inputs, then 1..14 as in docs/walkthrough.md
    std::string name;                     // what the step does: "project", "view", "softmax", ...
    std::string tensor;                   // which tensor it yields: "Q", "scores", "output", ...
    std::string expression;               // the PyTorch expression, e.g. "Q.view(B, N, h, d_k)"
    std::vector<std::string> dims;        // a name for every dimension: {"B", "h", "N", "d_k"}
    Shape shape;                          // the tensor's sizes, one per name in dims
    Strides strides;                      // in elements, as Tensor.stride() reports them
    bool contiguous = true;
    std::uint64_t copied_bytes = 0;       // bytes moved only to change the memory layout
    std::uint64_t macs = 0;               // multiply-adds of the step's matrix products
    std::vector<std::string> notes;       // conventions applied, e.g. which mask and how
    std::vector<std::vector<bool>> allowed;  // step 8: (N, M) keys each query may see, batch 0
                                             // head 0; empty when N or M is too large to draw
    const Tensor* value = nullptr;        // the tensor itself, valid only during on_step; null when
                                          // the step has no values (--shapes-only, a cache view)
};

class Tracer {
public:
    virtual ~Tracer() = default;
    // false: the forward pass does not even build the Step records
    virtual bool enabled() const { return true; }
    virtual void on_step(const Step& step) = 0;
};

// The default: observes nothing, so an untraced run pays nothing.
class NullTracer final : public Tracer {
public:
    bool enabled() const override { return false; }
    void on_step(const Step&) override {}
};

// A Step for a tensor of this shape and these strides, without its values.
inline Step make_layout_step(int number, std::string name, std::string tensor,
                             std::string expression, std::vector<std::string> dims, Shape shape,
                             Strides strides, std::uint64_t macs = 0) {
    Step step;
    step.number = number;
    step.name = std::move(name);
    step.tensor = std::move(tensor);
    step.expression = std::move(expression);
    step.dims = std::move(dims);
    step.contiguous = is_contiguous(shape, strides);
    step.shape = std::move(shape);
    step.strides = std::move(strides);
    step.macs = macs;
    return step;
}

// A Step describing `value`, which must outlive the tracer's on_step call.
inline Step make_step(int number, std::string name, std::string tensor, std::string expression,
                      std::vector<std::string> dims, const Tensor& value, std::uint64_t macs = 0) {
    Step step = make_layout_step(number, std::move(name), std::move(tensor), std::move(expression),
                                 std::move(dims), value.shape(), value.strides(), macs);
    step.value = &value;
    return step;
}

// Builds the Step (a callable returning Step) only when someone is listening.
template <typename MakeStep>
void report(Tracer& tracer, MakeStep&& make_step) {
    if (tracer.enabled()) tracer.on_step(make_step());
}

}  // namespace mha
