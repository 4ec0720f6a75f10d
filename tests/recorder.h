#pragma once
// A Tracer for tests: keeps every Step it is shown.

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "core/step.h"

namespace test {

// Keeps every Step (without the value pointer, which dies with the step).
class Recorder : public mha::Tracer {
public:
    void on_step(const mha::Step& step) override {
        steps.push_back(step);
        steps.back().value = nullptr;
    }
    std::vector<mha::Step> steps;

    const mha::Step& find(int number, const std::string& tensor = "") const {
        for (const mha::Step& s : steps) {
            if (s.number == number && (tensor.empty() || s.tensor == tensor)) return s;
        }
        FAIL("no step " << number << " " << tensor);
        return steps.front();
    }
};

}  // namespace test
