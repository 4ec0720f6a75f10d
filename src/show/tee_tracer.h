#pragma once
// Two tracers watching one forward pass: each sees the steps only if it is enabled.

#include "core/pass/step.h"

namespace mha {

class TeeTracer final : public Tracer {
public:
    TeeTracer(Tracer& first, Tracer& second) : first_(first), second_(second) {}

    bool enabled() const override { return first_.enabled() || second_.enabled(); }
    void on_step(const Step& step) override {
        if (first_.enabled()) first_.on_step(step);
        if (second_.enabled()) second_.on_step(step);
    }

private:
    Tracer& first_;
    Tracer& second_;
};

}  // namespace mha
