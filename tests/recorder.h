#pragma once
// A Tracer for tests: keeps every Step it is shown, and the layout of the tensor it came with.

#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/pass/step.h"

namespace test {

// The layout of a computed tensor, read from the tensor itself (not from its Step).
struct SeenLayout {
    mha::Shape shape;
    mha::Strides strides;
    bool contiguous = true;
};

// Keeps every Step (without the value pointer, which dies with the step).
class Recorder : public mha::Tracer {
public:
    void on_step(const mha::Step& step) override {
        steps.push_back(step);
        steps.back().value = nullptr;
        seen.push_back(step.value ? std::optional<SeenLayout>(
                                        SeenLayout{step.value->shape(), step.value->strides(),
                                                   step.value->is_contiguous()})
                                  : std::nullopt);
    }
    std::vector<mha::Step> steps;
    std::vector<std::optional<SeenLayout>> seen;  // one per step; empty: the step had no tensor

    const mha::Step& find(int number, const std::string& tensor = "") const {
        for (const mha::Step& s : steps) {
            if (s.number == number && (tensor.empty() || s.tensor == tensor)) return s;
        }
        FAIL("no step " << number << " " << tensor);
        return steps.front();
    }
};

}  // namespace test
