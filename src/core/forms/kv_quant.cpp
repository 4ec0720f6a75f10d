// The quantised KV cache: KIVI's asymmetric min-max codes per group, and the error they carry.
//
//   cache (B, G, T, d_k) float, filled one position per token; positions [0, Q) held as codes:
//   token axis:   groups x = cache[b, g, t, j·g : (j+1)·g]      scale, zero (B, G, Q, d_k/g)
//   channel axis: groups x = cache[b, g, k·g : (k+1)·g, c]      scale, zero (B, G, Q/g, d_k)
//   m = x.min(), s = (x.max() − m) / (2^bits − 1), x̂ = s · clamp(round(x − m) / s), 0, 2^bits − 1) + m

#include "core/forms/kv_quant.h"

#include <algorithm>
#include <cmath>

#include "core/checked.h"
#include "core/error.h"
#include "core/kv_heads.h"
#include "core/pass/describe.h"

namespace mha {

namespace {

// The name of the cache's head dimension: h, or G when heads share K and V.
std::string kv_dim(const Sizes& s) { return s.kv_heads == s.heads ? "h" : "G"; }

// "15" for int4, "255" for int8: the largest code.
std::string levels_of(unsigned bits) { return std::to_string((1u << bits) - 1); }

// The largest |diff| with the largest |base| over n values: the error's max abs and relative.
QuantErrorFacts error_of(const float* diff, const float* base, std::size_t n) {
    double worst = 0.0, largest = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
        worst = std::max(worst, std::fabs(double(diff[i])));
        largest = std::max(largest, std::fabs(double(base[i])));
    }
    QuantErrorFacts facts;
    facts.max_abs = worst;
    facts.relative = largest > 0.0 ? worst / largest : 0.0;
    return facts;
}

// One tensor's bytes at `length` positions: (codes, scales and zeros, floats, plain).
KvQuantBytes tensor_bytes(const KvQuant& quant, QuantAxis axis, const Sizes& s,
                          std::size_t length) {
    const std::string what = "the quantised cache's bytes";
    const std::uint64_t d_k = s.d_k(), rows = checked_product({s.batch, s.kv_heads}, what);
    const std::size_t group = quant_group(quant, axis, s.seq_len, s.d_k());
    const std::uint64_t Q = quantised_positions(quant, axis, group, length);
    const std::uint64_t codes = checked_product({rows, Q, d_k}, what);
    KvQuantBytes bytes;
    bytes.codes = (checked_product({codes, quant.bits}, what) + 7) / 8;
    bytes.scales = checked_product({codes / group, 2, sizeof(float)}, what);
    bytes.floats = checked_product({rows, length - Q, d_k, sizeof(float)}, what);
    bytes.plain = checked_product({rows, length, d_k, sizeof(float)}, what);
    return bytes;
}

// The group at `from` (its x̂ at `to`), for the trace.
QuantGroupExample example_of(const float* from, const float* to, std::size_t stride,
                             std::size_t count, GroupCode code, std::size_t first) {
    QuantGroupExample example{first, code.scale, code.zero, {}, {}, {}};
    for (std::size_t i = 0; i < count; ++i) {
        example.x.push_back(from[i * stride]);
        example.ratio.push_back(code.scale > 0 ? (from[i * stride] - code.zero) / code.scale : 0.0f);
        example.x_hat.push_back(to[i * stride]);
    }
    return example;
}

// A cache of `length` positions quantised as `quant` says: its bits, length and bytes.
KvQuantFacts bytes_facts(const KvQuant& quant, const Sizes& s, std::size_t length) {
    const KvQuantBytes bytes = kv_quant_bytes(quant, s, length);
    KvQuantFacts facts;
    facts.bits = quant.bits;
    facts.length = length;
    facts.code_bytes = bytes.codes;
    facts.scale_bytes = bytes.scales;
    facts.float_bytes = bytes.floats;
    facts.plain_bytes = bytes.plain;
    return facts;
}

}  // namespace

std::size_t quant_group(const KvQuant& quant, QuantAxis axis, std::size_t T, std::size_t d_k) {
    if (quant.group) return quant.group;
    return std::min(default_quant_group, axis == QuantAxis::Token ? d_k : T);
}

std::size_t quantised_positions(const KvQuant& quant, QuantAxis axis, std::size_t group,
                                std::size_t length) {
    const std::size_t old = length > quant.residual ? length - quant.residual : 0;
    return axis == QuantAxis::Token ? old : old / group * group;
}

GroupCode quantise_group(const float* from, std::size_t count, std::size_t stride, unsigned bits,
                         float* to) {
    float lo = from[0], hi = from[0];
    for (std::size_t i = 1; i < count; ++i) {
        lo = std::min(lo, from[i * stride]);
        hi = std::max(hi, from[i * stride]);
    }
    if (hi == lo) {  // one value: x̂ = m, and no scale to divide by
        for (std::size_t i = 0; i < count; ++i) to[i * stride] = lo;
        return {0.0f, lo};
    }
    const float top = float((1u << bits) - 1);
    const float scale = (hi - lo) / top;
    for (std::size_t i = 0; i < count; ++i) {
        // nearbyint in the default rounding mode: to nearest, ties to even
        const float code = std::min(std::max(std::nearbyint((from[i * stride] - lo) / scale), 0.0f), top);
        to[i * stride] = scale * code + lo;
    }
    return {scale, lo};
}

KvQuantBytes kv_quant_bytes(const KvQuant& quant, const Sizes& s, std::size_t length) {
    const KvQuantBytes k = tensor_bytes(quant, quant.k_axis, s, length);
    const KvQuantBytes v = tensor_bytes(quant, quant.v_axis, s, length);
    const std::string what = "the quantised cache's bytes";
    return {checked_sum({k.codes, v.codes}, what), checked_sum({k.scales, v.scales}, what),
            checked_sum({k.floats, v.floats}, what), checked_sum({k.plain, v.plain}, what)};
}

QuantisedTensor::QuantisedTensor(char name, const KvQuant& quant, QuantAxis axis,
                                 const Tensor& cache, Workspace* workspace)
    : name_(name), quant_(quant), axis_(axis) {
    const std::size_t B = cache.size(0), G = cache.size(1), T = cache.size(2), d_k = cache.size(3);
    group_ = quant_group(quant, axis, T, d_k);
    const bool token = axis == QuantAxis::Token;
    if (token ? d_k % group_ != 0 : group_ > T) {
        throw Error("a quantisation group of " + std::to_string(group_) +
                    (token ? " does not divide d_k = " + std::to_string(d_k)
                           : " is longer than the " + std::to_string(T) + " cached positions"));
    }
    dequantised_ = new_tensor(workspace, {B, G, T, d_k});
    const Shape groups = token ? Shape{B, G, T, d_k / group_} : Shape{B, G, T / group_, d_k};
    scale_ = new_tensor(workspace, groups);
    zero_ = new_tensor(workspace, groups);
}

std::size_t QuantisedTensor::groups_done() const {
    return axis_ == QuantAxis::Token ? quantised_ : quantised_ / group_;
}

Tensor QuantisedTensor::scale() const { return scale_.narrow(2, 0, groups_done()); }
Tensor QuantisedTensor::zero() const { return zero_.narrow(2, 0, groups_done()); }

bool QuantisedTensor::take(const Tensor& cache, std::size_t length) {
    const std::size_t before = quantised_, before_groups = groups_done();
    quantised_ = quantised_positions(quant_, axis_, group_, length);
    example_.reset();
    if (!any_dry(cache, dequantised_)) {
        const std::size_t B = cache.size(0), G = cache.size(1), T = cache.size(2),
                          d_k = cache.size(3), columns = scale_.size(3);
        const std::size_t groups = scale_.size(2);
        for (std::size_t r = 0; r < B * G; ++r) {  // each (batch, K/V head)
            const float* from = cache.data() + r * T * d_k;
            float* to = dequantised_.data() + r * T * d_k;
            std::copy(from + taken_ * d_k, from + length * d_k, to + taken_ * d_k);
            for (std::size_t k = before_groups; k < groups_done(); ++k) {
                for (std::size_t j = 0; j < columns; ++j) {
                    const std::size_t first = axis_ == QuantAxis::Token ? k * d_k + j * group_
                                                                        : k * group_ * d_k + j;
                    const std::size_t stride = axis_ == QuantAxis::Token ? 1 : d_k;
                    const GroupCode code =
                        quantise_group(from + first, group_, stride, quant_.bits, to + first);
                    scale_.data()[(r * groups + k) * columns + j] = code.scale;
                    zero_.data()[(r * groups + k) * columns + j] = code.zero;
                    if (r == 0 && !example_) example_ = example_of(from + first, to + first, stride, group_, code, axis_ == QuantAxis::Token ? k : k * group_);
                }
            }
        }
    }
    taken_ = length;
    return quantised_ > before;
}

void QuantisedTensor::show(const Sizes& s, std::size_t length, PassTrace& trace) const {
    if (!trace.on()) return;
    const bool channel = axis_ == QuantAxis::Channel;
    const std::string n(1, name_), g = std::to_string(group_), levels = levels_of(quant_.bits);
    const std::string grouped = n + "_cache[:, :, :" + std::to_string(quantised_) + "]" +
                                (channel ? ".unflatten(2, (-1, " + g + "))"    // (B, G, Q/g, g, d_k)
                                         : ".unflatten(3, (-1, " + g + "))");  // (B, G, Q, d_k/g, g)
    const std::string reduced = channel ? "(dim=3)" : "(dim=4)";
    const Dims dims = channel ? Dims{"B", kv_dim(s), "T_q/" + g, "d_k"}
                              : Dims{"B", kv_dim(s), "T_q", "d_k/" + g};
    KvQuantFacts facts = bytes_facts(quant_, s, length);
    facts.tensor = name_;
    facts.group = group_;
    facts.along_tokens = channel;
    facts.quantised = quantised_;
    facts.residual = quant_.residual;
    const auto step = [&](KvQuantFacts::Part part, std::string name, std::string tensor,
                          std::string expression, Dims d) {
        Step described_step = described(StepKind::Quantise, 2, std::move(name), std::move(tensor),
                                        std::move(expression), std::move(d));
        described_step.facts.kv_quant = facts;
        described_step.facts.kv_quant->part = part;
        if (part == KvQuantFacts::Part::Dequantised) described_step.facts.kv_quant->example = example_;
        return described_step;
    };
    trace.show(zero(), [&] {
        return step(KvQuantFacts::Part::Zero, "quantise", n + "_zero", n + "_zero = " + grouped + ".amin" + reduced, dims);
    });
    trace.show(scale(), [&] {
        return step(KvQuantFacts::Part::Scale, "quantise", n + "_scale",
                    n + "_scale = (" + grouped + ".amax" + reduced + " - " + n + "_zero) / " +
                        levels,
                    dims);
    });
    trace.show(read().narrow(2, 0, length), [&] {
        return step(KvQuantFacts::Part::Dequantised, "dequantise", n + "_hat",
                    n + "_hat = " + n + "_scale * ((" + n + "_cache - " + n + "_zero) / " + n +
                        "_scale).round().clamp(0, " + levels + ") + " + n + "_zero",
                    {"B", kv_dim(s), "t", "d_k"});
    });
}

KvQuantRun::KvQuantRun(const KvQuant& quant, const Sizes& sizes, const ForwardOptions& options,
                       const Tensor& cache_k, const Tensor& cache_v, ForwardResult reference)
    : quant_(quant),
      sizes_(sizes),
      factor_(unit_math(sizes, options).factor),
      workspace_(options.workspace),
      k_('K', quant, quant.k_axis, cache_k, options.workspace),
      v_('V', quant, quant.v_axis, cache_v, options.workspace),
      reference_(std::move(reference)) {}

void KvQuantRun::take(const Tensor& cache_k, const Tensor& cache_v, std::size_t t,
                      PassTrace& trace) {
    if (k_.take(cache_k, t + 1)) k_.show(sizes_, t + 1, trace);
    if (v_.take(cache_v, t + 1)) v_.show(sizes_, t + 1, trace);
}

void KvQuantRun::show_score_error(const Tensor& q, const Tensor& cache_k, std::size_t t,
                                  PassTrace& trace) const {
    if (!trace.on()) return;
    const Sizes& s = sizes_;
    const std::size_t B = s.batch, h = s.heads, G = s.kv_heads, T = s.seq_len, d_k = s.d_k(),
                      W = s.inner(), length = t + 1;
    const bool dry = any_dry(q, cache_k, k_.read());
    Tensor diff = dry ? new_dry(workspace_, {B, h, 1, length})
                      : new_tensor(workspace_, {B, h, 1, length});
    std::vector<float> exact(dry ? 0 : B * h * length);
    for (std::size_t u = 0; !dry && u < B * h; ++u) {
        const std::size_t b = u / h, i = u % h, g = kv_head_of(i, h, G);
        const float* row = q.data() + b * W + i * d_k;
        for (std::size_t j = 0; j < length; ++j) {
            const std::size_t at = ((b * G + g) * T + j) * d_k;
            double plain = 0.0, quantised = 0.0;
            for (std::size_t c = 0; c < d_k; ++c) {
                plain += double(row[c]) * cache_k.data()[at + c];
                quantised += double(row[c]) * k_.read().data()[at + c];
            }
            exact[u * length + j] = float(plain * factor_);
            diff.data()[u * length + j] = float((quantised - plain) * factor_);
        }
    }
    trace.show(diff, [&] {
        Step step = described(StepKind::QuantError, 6, "error", "scores_error",
                              "scores_error = (q_t @ K_hat.mT - q_t @ K_cache.mT) * factor",
                              {"B", "h", "N", "t"}, macs_of({2, B, h, length, d_k}));
        step.facts.quant_error =
            dry ? QuantErrorFacts{} : error_of(diff.data(), exact.data(), exact.size());
        step.facts.quant_error->of = QuantErrorFacts::Of::Scores;
        return step;
    });
}

void KvQuantRun::show_weight_error(const Tensor& weights, std::size_t t, PassTrace& trace) const {
    if (!trace.on() || weights.empty()) return;
    const std::size_t B = sizes_.batch, h = sizes_.heads, T = sizes_.seq_len, length = t + 1;
    const bool dry = weights.dry() || reference_.weights.empty();
    Tensor diff = dry ? new_dry(workspace_, {B, h, 1, length})
                      : new_tensor(workspace_, {B, h, 1, length});
    std::vector<float> before(dry ? 0 : B * h * length);
    QuantErrorFacts::Moved moved;
    for (std::size_t u = 0; !dry && u < B * h; ++u) {
        for (std::size_t j = 0; j < length; ++j) {
            const std::size_t at = (u * T + t) * T + j, to = u * length + j;
            before[to] = reference_.weights.data()[at];
            diff.data()[to] = weights.data()[at] - before[to];
            if (std::fabs(diff.data()[to]) > std::fabs(moved.after - moved.before))
                moved = {u / h, u % h, j, before[to], weights.data()[at]};
        }
    }
    trace.show(diff, [&] {
        Step step = described(StepKind::QuantError, 9, "error", "weights_error",
                              "weights_error = weights - weights over the float cache",
                              {"B", "h", "N", "t"});
        if (!dry) {
            step.facts.quant_error = error_of(diff.data(), before.data(), before.size());
            step.facts.quant_error->moved = moved;
        } else {
            step.facts.quant_error = QuantErrorFacts{};
        }
        step.facts.quant_error->of = QuantErrorFacts::Of::Weights;
        return step;
    });
}

void KvQuantRun::show_output_error(const Tensor& out, std::size_t t, PassTrace& trace) const {
    if (!trace.on()) return;
    const std::size_t B = sizes_.batch, T = sizes_.seq_len, E = sizes_.d_model;
    const bool dry = out.dry() || reference_.output.empty();
    Tensor diff = dry ? new_dry(workspace_, {B, 1, E}) : new_tensor(workspace_, {B, 1, E});
    std::vector<float> before(dry ? 0 : B * E);
    for (std::size_t b = 0; !dry && b < B; ++b) {
        for (std::size_t e = 0; e < E; ++e) {
            before[b * E + e] = reference_.output.data()[(b * T + t) * E + e];
            diff.data()[b * E + e] = out.data()[b * E + e] - before[b * E + e];
        }
    }
    trace.show(diff, [&] {
        Step step = described(StepKind::QuantError, 14, "error", "out_error",
                              "out_error = out_t - out_t over the float cache",
                              {"B", "N", "d_model"});
        step.facts.quant_error =
            dry ? QuantErrorFacts{} : error_of(diff.data(), before.data(), before.size());
        step.facts.kv_quant = bytes_facts(quant_, sizes_, t + 1);
        return step;
    });
}

std::vector<std::pair<std::string, Tensor>> KvQuantRun::arrays(const Tensor& cache_k,
                                                               const Tensor& cache_v) const {
    std::vector<std::pair<std::string, Tensor>> saved = {
        {"k_cache", cache_k}, {"v_cache", cache_v},
        {"k_cache.dequantised", k_.read()}, {"v_cache.dequantised", v_.read()}};
    for (const QuantisedTensor* tensor : {&k_, &v_}) {
        if (!tensor->quantised()) continue;
        const std::string name = tensor == &k_ ? "k_cache" : "v_cache";
        saved.emplace_back(name + ".scale", tensor->scale().contiguous());
        saved.emplace_back(name + ".zero", tensor->zero().contiguous());
    }
    return saved;
}

}  // namespace mha
