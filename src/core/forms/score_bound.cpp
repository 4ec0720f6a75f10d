// Upper bounds on Q, K and the scores from the largest inputs and weights, checked against
// float32's range before the pass runs.

#include "core/forms/score_bound.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/pass/score_rules.h"

namespace mha {

namespace {

// Room for float32's rounding: the computed values may pass the exact bounds a little.
constexpr double limit = std::numeric_limits<float>::max() / 4;

// max over the rows r of w (out, in) of Σ_c |w[r][c]|: the most one output of x wᵀ can
// gather from inputs of magnitude at most 1.
// Eight partial sums per row, independent chains the compiler can keep in vector lanes (a
// bound needs no particular order, and double's rounding is far inside `limit`'s room).
double largest_row_sum(const Tensor& w) {
    constexpr std::size_t lanes = 8;
    const std::size_t cols = w.size(1), step = w.strides()[1];
    double largest = 0.0;
    for (std::size_t r = 0; r < w.size(0); ++r) {
        const float* row = w.data() + r * w.strides()[0];
        double partial[lanes] = {};
        std::size_t c = 0;
        if (step == 1) {  // the usual layout: unit stride, so the lanes load as one vector
            for (; c + lanes <= cols; c += lanes) {
                for (std::size_t l = 0; l < lanes; ++l) partial[l] += std::fabs(row[c + l]);
            }
        }
        double sum = 0.0;
        for (; c < cols; ++c) sum += std::fabs(row[c * step]);
        for (const double p : partial) sum += p;
        largest = std::max(largest, sum);
    }
    return largest;
}

// The largest |value| of x wᵀ + b over inputs no larger than `input` in magnitude.
double projection_bound(const Tensor& w, const Tensor& b, double input) {
    return largest_row_sum(w) * input + largest_value(b);
}

}  // namespace

double largest_value(const Tensor& t) {
    const std::size_t count = t.numel();
    if (count == 0) return 0.0;
    double largest = 0.0;
    if (t.is_contiguous()) {
        for (std::size_t i = 0; i < count; ++i)
            largest = std::max(largest, double(std::fabs(t.data()[i])));
        return largest;
    }
    std::vector<std::size_t> index(t.dim(), 0);  // C order over the shape, read through the strides
    for (std::size_t i = 0; i < count; ++i) {
        std::size_t offset = 0;
        for (std::size_t d = 0; d < t.dim(); ++d) offset += index[d] * t.strides()[d];
        largest = std::max(largest, double(std::fabs(t.data()[offset])));
        for (std::size_t d = t.dim(); d-- > 0;) {
            if (++index[d] < t.size(d)) break;
            index[d] = 0;
        }
    }
    return largest;
}

double layer_norm_bound(const Tensor& gamma, const Tensor& beta) {
    return std::sqrt(double(gamma.numel())) * largest_value(gamma) + largest_value(beta);
}

bool may_overflow(const Weights& w, double query_input, double key_input,
                  const ForwardOptions& options) {
    const std::size_t d_k = w.q_width() / options.heads;
    double q = projection_bound(w.w_q, w.b_q, query_input);
    double k = std::max(projection_bound(w.w_k, w.b_k, key_input), largest_value(w.bias_k));
    if (!(q < limit && k < limit)) return true;  // a projection itself
    if (!w.q_norm.empty()) {  // RMSNorm: |x_i| / rms(x) <= sqrt(d_k), times its weight
        q = std::sqrt(double(d_k)) * largest_value(w.q_norm);
        k = std::sqrt(double(d_k)) * largest_value(w.k_norm);
    }
    if (options.rope) {  // a turned pair keeps its length: each half at most sqrt(2)·max
        q *= std::sqrt(2.0);
        k *= std::sqrt(2.0);
    }
    const double base = options.scale_base > 0 ? options.scale_base : double(d_k);
    const double score = double(d_k) * q * k * score_factor(base, options.scale);
    return !(q < limit && k < limit && score < limit);
}

namespace {

constexpr double beyond = std::numeric_limits<double>::infinity();  // a step may overflow

// The largest |value| of attention's output over inputs no larger than `input`: softmax
// mixes V, so each context value is at most max|V|, and then W_o.
double attention_output_bound(const Weights& w, double input) {
    const double v = std::max(projection_bound(w.w_v, w.b_v, input), largest_value(w.bias_v));
    const double out = projection_bound(w.w_o, w.b_o, v);
    return v < limit && out < limit ? out : beyond;
}

// The largest |value| of the feed-forward over inputs no larger than `input`: |GELU(u)| <= |u|.
double feed_forward_bound(const BlockWeights& block, double input) {
    const double hidden = projection_bound(block.w_1, block.b_1, input);
    const double out = projection_bound(block.w_2, block.b_2, hidden);
    return hidden < limit && out < limit ? out : beyond;
}

// The most a pre-LN block adds to its residual stream, whatever its input.
double pre_norm_increment(const BlockWeights& block, const Weights& attention) {
    const double normed1 = layer_norm_bound(block.norm1_weight, block.norm1_bias);
    const double normed2 = layer_norm_bound(block.norm2_weight, block.norm2_bias);
    return attention_output_bound(attention, normed1) + feed_forward_bound(block, normed2);
}

}  // namespace

bool may_overflow(const BlockWeights& block, const Weights& attention, double input,
                  bool pre_norm) {
    if (pre_norm) return !(input + pre_norm_increment(block, attention) < limit);
    // post: h = LN_1(x + Attn(x)), then h + FFN(h)
    const double normed = layer_norm_bound(block.norm1_weight, block.norm1_bias);
    return !(input + attention_output_bound(attention, input) < limit &&
             normed + feed_forward_bound(block, normed) < limit);
}

bool may_overflow(const Model& model) {
    double residual =  // the embeddings, token plus position
        largest_value(model.token_embedding) + largest_value(model.position_embedding);
    for (const ModelLayer& layer : model.layers) {
        ForwardOptions options;
        options.heads = layer.heads;
        const double input = layer_norm_bound(layer.block.norm1_weight, layer.block.norm1_bias);
        if (may_overflow(layer.attention, input, input, options)) return true;
        residual += pre_norm_increment(layer.block, layer.attention);
        if (!(residual < limit)) return true;
    }
    const double normed = layer_norm_bound(model.norm_weight, model.norm_bias);
    return !(projection_bound(model.head_weight, model.head_bias, normed) < limit);
}

bool may_overflow(const MlaWeights& w, std::size_t heads, double input) {
    const MlaSizes s = mla_sizes(w, heads);
    const double q = largest_row_sum(w.w_q) * input;        // q_proj
    const double kv_a = largest_row_sum(w.w_kv_a) * input;  // the latent before its norm, k_pe
    const double latent = std::sqrt(double(s.d_latent)) * largest_value(w.kv_norm);
    const double key = largest_row_sum(w.w_kv_b) * latent;  // naive: the latent up-projected
    // absorbed: q times W_UK, at most d_h·max|q|·max|W_UK| per latent feature
    const double q_latent = double(s.d_nope) * q * largest_value(w.w_kv_b);
    const double nope =
        std::max(double(s.d_nope) * q * key, double(s.d_latent) * q_latent * latent);
    const double pe = double(s.d_rope) * 2.0 * q * kv_a;  // both rotated: sqrt(2) each
    const double score = (nope + pe) / std::sqrt(double(s.d_nope + s.d_rope));
    return !(q < limit && kv_a < limit && key < limit && q_latent < limit && nope < limit &&
             pe < limit && score < limit);
}

}  // namespace mha
