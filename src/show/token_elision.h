#pragma once
// A dry decode's trace without its middle tokens (T >= 4): every step of token 1 and of token
// T; before token T's first step, a line (to the text report's stream, if given) saying that
// tokens 2..T-1 took the same steps, and how many were left out.

#include <cstddef>
#include <ostream>

#include "core/pass/step.h"

namespace mha {

class TokenElision final : public Tracer {
public:
    // said: where the line goes (the text trace's stream), or null for the other formats.
    TokenElision(Tracer& next, std::ostream* said) : next_(next), said_(said) {}

    bool enabled() const override { return next_.enabled(); }
    void on_step(const Step& step) override;

private:
    Tracer& next_;
    std::ostream* said_;
    std::size_t token_ = 0, count_ = 0;  // the token the steps belong to (1-based; 0 before
                                         // the first), of T
    std::size_t left_out_ = 0;           // steps not passed on
    bool said_so_ = false;               // the line before token T is written
};

}  // namespace mha
