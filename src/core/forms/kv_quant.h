#pragma once
// A quantised KV cache, as KIVI keeps it: asymmetric min-max codes per group in float32.
// For a group x of `group` elements with m = min x, s = (max x − m)/(2^b − 1):
//   q = clamp(round_half_even((x − m)/s), 0, 2^b − 1),   x̂ = s·q + m   (x̂ = m when s = 0).
// Token groups run along d_k within one position's vector; channel groups run along the
// positions within one channel, and a last group that is not full yet stays float (KIVI's
// residual). The last R positions stay float too. Attention then reads x̂.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/pass/attention.h"
#include "core/pass/trace.h"
#include "core/sizes.h"
#include "core/tensor/tensor.h"
#include "core/tensor/workspace.h"

namespace mha {

enum class QuantAxis {
    Token,    // groups along d_k, within one position's vector
    Channel,  // groups along the positions, within one channel
};

struct KvQuant {
    unsigned bits = 0;                      // 8 or 4; 0: the cache stays float
    std::size_t group = 0;                  // elements sharing a scale; 0: the default
    QuantAxis k_axis = QuantAxis::Channel;  // KIVI: K per channel,
    QuantAxis v_axis = QuantAxis::Token;    //       V per token
    std::size_t residual = 0;               // the last R cached positions stay float
    bool on() const { return bits > 0; }
};

inline constexpr std::size_t default_quant_group = 32;

// The group along `axis` of a cache of T positions (d_k wide): quant.group, or 32 (the axis's
// length if shorter) when it is 0.
std::size_t quant_group(const KvQuant& quant, QuantAxis axis, std::size_t T, std::size_t d_k);

// The positions [0, result) held as codes once `length` are cached: those before the last
// R, in whole groups along the positions for the channel axis.
std::size_t quantised_positions(const KvQuant& quant, QuantAxis axis, std::size_t group,
                                std::size_t length);

// One group's scale s and zero point m.
struct GroupCode {
    float scale, zero;
};

// Quantises the `count` floats from[0], from[stride], ... and writes their x̂ to the same
// places of `to`.
GroupCode quantise_group(const float* from, std::size_t count, std::size_t stride, unsigned bits,
                         float* to);

// The bytes of a (B, G, length, d_k) K and V cache quantised as `quant` says: codes, scales
// and zero points, the positions still float, and all of it in float.
struct KvQuantBytes {
    std::uint64_t codes = 0, scales = 0, floats = 0, plain = 0;
    std::uint64_t total() const { return codes + scales + floats; }
};
KvQuantBytes kv_quant_bytes(const KvQuant& quant, const Sizes& sizes, std::size_t length);

// One tensor of the cache, K or V, quantised as it fills.
class QuantisedTensor {
public:
    // cache (B, G, T, d_k): the float cache this one follows.
    QuantisedTensor(char name, const KvQuant& quant, QuantAxis axis, const Tensor& cache,
                    Workspace* workspace);

    // Takes positions [taken, length) of the float cache and quantises what has left the
    // residual; true when new groups were quantised.
    bool take(const Tensor& cache, std::size_t length);

    const Tensor& read() const { return dequantised_; }  // (B, G, T, d_k) what attention reads
    Tensor scale() const;  // the quantised groups' scales: (B, G, Q, d_k/g) or (B, G, Q/g, d_k)
    Tensor zero() const;   // their zero points, likewise
    std::size_t quantised() const { return quantised_; }

    // 2: the scales, the zero points and the dequantised view of `length` positions.
    void show(const Sizes& s, std::size_t length, PassTrace& trace) const;

private:
    std::size_t groups_done() const;  // along dim 2 of scale_

    char name_;
    KvQuant quant_;
    QuantAxis axis_;
    std::size_t group_;
    Tensor dequantised_;  // (B, G, T, d_k)
    Tensor scale_, zero_;  // (B, G, T, d_k/g) token axis; (B, G, T/g, d_k) channel axis
    std::size_t taken_ = 0, quantised_ = 0;
    std::optional<QuantGroupExample> example_;  // the first group the last take() quantised
};

// Decode's quantised cache, K and V, and the error it carries against a run over the float
// cache (the reference: its output (B, T, d_model) and weights (B, h, T, T); empty when the
// errors are not shown or there are no values).
class KvQuantRun {
public:
    KvQuantRun(const KvQuant& quant, const Sizes& sizes, const ForwardOptions& options,
               const Tensor& cache_k, const Tensor& cache_v, ForwardResult reference);

    // 2: takes token t's K and V (positions up to t + 1) and shows what was quantised.
    void take(const Tensor& cache_k, const Tensor& cache_v, std::size_t t, PassTrace& trace);
    const Tensor& k() const { return k_.read(); }  // (B, G, T, d_k)
    const Tensor& v() const { return v_.read(); }

    // 6: q_t (B, 1, h·d_k) against the dequantised keys minus against the float keys.
    void show_score_error(const Tensor& q, const Tensor& cache_k, std::size_t t,
                          PassTrace& trace) const;
    // 9: token t's weights (row t of all (B, h, T, T)) minus the float run's.
    void show_weight_error(const Tensor& weights, std::size_t t, PassTrace& trace) const;
    // 14: token t's output (B, 1, d_model) minus the float run's.
    void show_output_error(const Tensor& out, std::size_t t, PassTrace& trace) const;

    // What --save writes of the cache: K and V in float and dequantised, scales, zero points.
    std::vector<std::pair<std::string, Tensor>> arrays(const Tensor& cache_k,
                                                       const Tensor& cache_v) const;

private:
    KvQuant quant_;
    Sizes sizes_;
    float factor_;  // step 7's
    Workspace* workspace_;
    QuantisedTensor k_, v_;
    ForwardResult reference_;
};

}  // namespace mha
