#pragma once
// Scaling made visible: a tracer that pools the variance of the raw scores over every
// step 6 it sees (all heads at once, or one head at a time), then a report that adds
// the variance the softmax sees (divided by d_k, or by S under --scale-base, when step 7
// scales), the softmax's mean row entropy and how many rows it saturated.

#include "core/pass/attention.h"
#include "core/pass/step.h"

#include <ostream>

namespace mha {

inline constexpr float saturated_weight = 0.99f;  // a row putting more than this on one key

class ScoreStats final : public Tracer {
public:
    explicit ScoreStats(bool wanted) : wanted_(wanted) {}

    bool enabled() const override { return wanted_; }
    void on_step(const Step& step) override;

    // weights (B, h, N, M) of the finished pass; d_k, whether step 7 scaled, S when it
    // divided by sqrt(S) in place of sqrt(d_k) (--scale-base; 0 for none) and its soft-cap
    // C (0 for none: then no line about it).
    void print(std::ostream& out, const ForwardResult& result, std::size_t d_k, bool scaled,
               double scale_base, double softcap) const;

private:
    bool wanted_;
    double count_ = 0.0;           // finite scores seen
    double mean_ = 0.0;            // their mean
    double squares_ = 0.0;         // their sum of squared deviations from the mean
    double largest_raw_ = 0.0;     // the largest finite |score| of step 6
    double largest_capped_ = 0.0;  // the largest finite |score| after step 7 (scale, soft-cap)
};

}  // namespace mha
