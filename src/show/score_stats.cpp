// Variance of the scores before and after step 7's scale (1/sqrt(d_k), or 1/sqrt(S)), and
// what the softmax made of them.

#include "show/score_stats.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "show/format.h"
#include "show/head_summary.h"
#include "show/summary.h"
#include "show/text_layout.h"

namespace mha {

// The largest finite |value|, 0 for none; read in place through stats_of (no copy).
static double largest_magnitude(const Tensor& t) {
    const TensorStats stats = stats_of(t);
    if (std::isnan(stats.min)) return 0.0;
    return std::max(std::fabs(stats.min), std::fabs(stats.max));
}

// Pools each step 6 tensor's mean and variance into the running ones (Chan et al.).
void ScoreStats::on_step(const Step& step) {
    if (step.value != nullptr && step.kind == StepKind::Scale) {
        largest_capped_ = std::max(largest_capped_, largest_magnitude(*step.value));
    }
    if (step.value == nullptr || step.kind != StepKind::Scores) return;
    largest_raw_ = std::max(largest_raw_, largest_magnitude(*step.value));
    const TensorStats stats = stats_of(*step.value);
    const double n = double(step.value->numel() - stats.nan_count - stats.inf_count);
    if (n == 0.0) return;
    const double total = count_ + n, delta = stats.mean - mean_;
    squares_ += stats.std * stats.std * n + delta * delta * count_ * n / total;
    mean_ += delta * n / total;
    count_ = total;
}

void ScoreStats::print(std::ostream& out, const ForwardResult& result, std::size_t d_k, bool scaled,
                       double scale_base, double softcap) const {
    const Tensor weights = result.weights.contiguous();
    const std::size_t m = weights.size(3), rows = weights.numel() / m;
    double entropy = 0.0;
    std::size_t counted = 0, saturated = 0;
    for (std::size_t r = 0; r < rows; ++r) {
        const float* row = weights.data() + r * m;
        const double e = row_entropy(row, m);
        if (std::isnan(e)) continue;
        entropy += e;
        ++counted;
        for (std::size_t key = 0; key < m; ++key) saturated += row[key] > saturated_weight ? 1 : 0;
    }
    const double raw = count_ > 0.0 ? squares_ / count_ : 0.0;
    // step 7 divides by sqrt(divisor): the variance by the divisor
    const double divisor = scale_base > 0.0 ? scale_base : double(d_k);
    // "after / sqrt(d_k)" is one word: a wrapped line never ends on the "/"
    std::vector<std::string> words =
        words_of("scores, all batches and heads: variance " + fixed(raw, 2) +
                 " from q·k (d_k = " + std::to_string(d_k) + "), " +
                 (scaled ? fixed(raw / divisor, 2) : "not scaled (--no-scale)"));
    if (scaled)
        words.push_back(std::string("after / sqrt(") + (scale_base > 0.0 ? "S" : "d_k") + ")");
    if (scaled && scale_base > 0.0) {
        std::ostringstream with;
        with << "with S = " << scale_base << " (--scale-base, in place of d_k)";
        for (std::string& word : words_of(with.str())) words.push_back(std::move(word));
    }
    out << "\n";
    if (count_ > 0.0) write_filled(out, words, " ", "", "  ");
    if (softcap > 0.0 && count_ > 0.0) {
        const double before = largest_raw_ / (scaled ? std::sqrt(divisor) : 1.0);
        write_filled(out,
                     words_of("soft-cap C = " + fixed(softcap, 2) + ": the largest |score| was " +
                              fixed(before, 3) + " before C·tanh(s/C) and " +
                              fixed(largest_capped_, 3) + " after; no score can reach C"),
                     " ", "", "  ");
    }
    const std::string mean = counted > 0 ? fixed(entropy / double(counted), 2) : "n/a";
    write_filled(
        out,
        words_of("softmax: mean row entropy " + mean + " nats (even over all " + std::to_string(m) +
                 " keys: " + fixed(std::log(double(m)), 2) + "); " + std::to_string(saturated) +
                 " of " + std::to_string(counted) + " rows saturated (one weight above 0.99)"),
        " ", "", "  ");
}

}  // namespace mha
