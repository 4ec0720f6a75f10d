// The demo heads' projections, written row by row from the maths of the encodings.
//
// Every head h owns rows [h·d_k, (h+1)·d_k) of W_q, W_k and W_v. Its score for
// query i and key j is q_i · k_j / sqrt(d_k), so each head is a bilinear form on
// the input rows; the gains below are chosen in logits, after that scale.

#include "io/demo_heads.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "io/text.h"

namespace mha {

namespace {

constexpr std::size_t position_pairs = 8;  // the 8 fastest sin/cos pairs locate a token
constexpr double position_margin = 8.0;    // logits between the target key and the next best
constexpr double token_gain = 64.0;        // logits for a perfect token match
constexpr double recency_gain = 12.0;      // logits of the preference for older keys
constexpr double quarter_turn = 1.5707963267948966;

// Indices into the input row and into a head's rows.
struct FeatureIndex {
    std::size_t d_model, d_k, half;
    std::size_t sin_of(std::size_t pair) const { return half + 2 * pair; }
    std::size_t cos_of(std::size_t pair) const { return half + 2 * pair + 1; }
};

// Σ_s cos(Δ·ω_s) over the position pairs: how alike the encodings of two
// positions Δ apart look through those pairs. Largest at Δ = 0.
double similarity(std::size_t delta, const FeatureIndex& l) {
    double sum = 0;
    for (std::size_t s = 0; s < position_pairs; ++s)
        sum += std::cos(double(delta) * encoding_frequency(s, l.half));
    return sum;
}

// The gain that puts the wanted key position_margin logits above every other
// key at distance 1 .. positions-1 (before the 1/sqrt(d_k) scale undoes it).
double position_gain(std::size_t positions, const FeatureIndex& l) {
    double runner_up = -double(position_pairs);
    for (std::size_t delta = 1; delta < std::max<std::size_t>(positions, 2); ++delta)
        runner_up = std::max(runner_up, similarity(delta, l));
    return std::sqrt(double(l.d_k)) * position_margin / (similarity(0, l) - runner_up);
}

void set(Tensor& w, std::size_t row, std::size_t col, double value) {
    w.data()[row * w.size(1) + col] = float(value);
}

// Keys of heads 0 and 1: k_j = the position pairs of x_j, unchanged.
void position_keys(Weights& w, std::size_t head, const FeatureIndex& l) {
    for (std::size_t s = 0; s < position_pairs; ++s) {
        set(w.w_k, head * l.d_k + 2 * s, l.sin_of(s), 1);
        set(w.w_k, head * l.d_k + 2 * s + 1, l.cos_of(s), 1);
    }
}

// Head 0: q_i = gain · PE(i-1), made from PE(i) by rotating each pair back by ω:
//   sin((i-1)ω) = cos ω·sin(iω) - sin ω·cos(iω),  cos((i-1)ω) = sin ω·sin(iω) + cos ω·cos(iω).
// Then q_i · k_j = gain · Σ_s cos((i-1-j)·ω_s), largest at j = i-1.
void previous_token(Weights& w, double gain, const FeatureIndex& l) {
    for (std::size_t s = 0; s < position_pairs; ++s) {
        const double omega = encoding_frequency(s, l.half);
        const std::size_t row = 2 * s;
        set(w.w_q, row, l.sin_of(s), gain * std::cos(omega));
        set(w.w_q, row, l.cos_of(s), -gain * std::sin(omega));
        set(w.w_q, row + 1, l.sin_of(s), gain * std::sin(omega));
        set(w.w_q, row + 1, l.cos_of(s), gain * std::cos(omega));
    }
    position_keys(w, 0, l);
}

// Head 1: no query weights, only a bias: q = gain · PE(0) = gain · (0, 1, 0, 1, ...).
// Then q · k_j = gain · Σ_s cos(j·ω_s), largest at j = 0 for every query.
void first_token(Weights& w, double gain, const FeatureIndex& l) {
    for (std::size_t s = 0; s < position_pairs; ++s) w.b_q.data()[l.d_k + 2 * s + 1] = float(gain);
    position_keys(w, 1, l);
}

// Head 2: the first d_k-2 token features match content, q_i · k_j ∝ e_i · e_j, which
// is largest for the same token. The last two rows add recency_gain · sin((i-j)·ω)
// with ω slow enough that (N-1)·ω ≤ π/2, so the score grows with the key's age and
// the earliest copy of the token wins the tie:
//   sin((i-j)ω) = sin(iω)·cos(jω) - cos(iω)·sin(jω).
void same_token(Weights& w, std::size_t positions, const FeatureIndex& l) {
    const std::size_t base = 2 * l.d_k;
    const std::size_t features = l.d_k - 2;
    const double match = std::sqrt(double(l.d_k)) * token_gain / double(features);
    for (std::size_t f = 0; f < features; ++f) {
        set(w.w_q, base + f, f, match);
        set(w.w_k, base + f, f, 1);
    }
    const double longest = double(std::max<std::size_t>(positions, 2) - 1);
    std::size_t pair = 0;
    while (encoding_frequency(pair, l.half) * longest > quarter_turn) ++pair;
    const double ramp = std::sqrt(double(l.d_k)) * recency_gain;
    const std::size_t row = base + features;
    set(w.w_q, row, l.sin_of(pair), ramp);
    set(w.w_k, row, l.cos_of(pair), 1);
    set(w.w_q, row + 1, l.cos_of(pair), -ramp);
    set(w.w_k, row + 1, l.sin_of(pair), 1);
}

}  // namespace

const std::vector<std::string>& demo_head_names() {
    static const std::vector<std::string> names = {"previous token", "first token", "same token",
                                                   "even"};
    return names;
}

Weights demo_weights(std::size_t d_model, std::size_t heads, std::size_t positions) {
    if (heads != demo_head_count || d_model < demo_min_d_model || d_model % 4 != 0) {
        throw Error(
            "--demo-heads builds 4 heads and needs --heads 4 and a --d-model that is a "
            "multiple of 4, at least 256; got --heads " +
            std::to_string(heads) + " --d-model " + std::to_string(d_model));
    }
    const FeatureIndex l{d_model, d_model / heads, d_model / 2};
    Weights w;
    for (Tensor* t : {&w.w_q, &w.w_k, &w.w_v, &w.w_o}) *t = Tensor({d_model, d_model});
    for (Tensor* b : {&w.b_q, &w.b_k, &w.b_v, &w.b_o}) *b = Tensor({d_model});
    const double gain = position_gain(positions, l);
    previous_token(w, gain, l);
    first_token(w, gain, l);
    same_token(w, positions, l);
    // Head 3 keeps zero query and key weights: every score is 0, so the softmax is even.
    for (std::size_t head = 0; head < heads; ++head) {
        for (std::size_t f = 0; f < l.d_k; ++f) set(w.w_v, head * l.d_k + f, f, 1);
    }
    for (std::size_t f = 0; f < d_model; ++f) set(w.w_o, f, f, 1);
    return w;
}

}  // namespace mha
