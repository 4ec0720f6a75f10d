#pragma once
// Scaling made visible: a tracer that keeps the variance of the raw scores (step 6)
// and of the scores the softmax sees (step 7), then a report that adds the
// softmax's mean row entropy and how many rows it saturated.

#include "core/attention.h"
#include "core/step.h"

#include <ostream>

namespace mha {

inline constexpr float saturated_weight = 0.99f;  // a row putting more than this on one key

class ScoreStats final : public Tracer {
public:
    explicit ScoreStats(bool wanted) : wanted_(wanted) {}

    bool enabled() const override { return wanted_; }
    void on_step(const Step& step) override;

    double raw_variance() const { return raw_variance_; }
    double scaled_variance() const { return scaled_variance_; }

    // weights (B, h, N, M) of the finished pass; d_k and whether step 7 scaled.
    void print(std::ostream& out, const ForwardResult& result, std::size_t d_k, bool scaled) const;

private:
    bool wanted_;
    double raw_variance_ = 0.0;
    double scaled_variance_ = 0.0;
};

}  // namespace mha
