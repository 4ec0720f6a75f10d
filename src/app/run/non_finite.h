#pragma once
// Where NaN or infinity first appears in a traced pass: the step, its tensor and the position.

#include <string>

#include "core/pass/step.h"

namespace mha {

// Records the first step of a traced pass whose tensor holds NaN or infinity (but the masked
// scores' -inf, there by design), in words: `value` "NaN" or "infinity", `where` e.g. "the
// gradient dV (step b10, grad) at (0, 1, 2, 3)"; both empty while every step is finite.
class NonFiniteFinder final : public Tracer {
public:
    void on_step(const Step& step) override;
    std::string value, where;
};

}  // namespace mha
