// --kv-quant's options: the axis each of K and V is grouped along, and the checks on sizes.

#include "app/run/kv_quant_options.h"

#include <string>

#include "core/error.h"

namespace mha {

namespace {

// "--kv-quant-group 3", or "the default group 32".
std::string group_words(const Config& c, std::size_t group) {
    return (c.kv_quant_group ? "--kv-quant-group " : "the default group ") + std::to_string(group);
}

}  // namespace

std::string operands_on(const KvQuant& q, QuantAxis axis) {
    if (q.k_axis == axis && q.v_axis == axis) return "K and V are";
    return q.k_axis == axis ? "K is" : "V is";
}

KvQuant kv_quant_of(const Config& c) {
    KvQuant quant;
    if (!c.kv_quant) return quant;
    quant.bits = *c.kv_quant;
    quant.group = c.kv_quant_group.value_or(0);
    quant.residual = c.kv_residual.value_or(0);
    switch (c.kv_quant_axis.value_or(KvQuantAxisChoice::Kivi)) {
        case KvQuantAxisChoice::Token:
            quant.k_axis = quant.v_axis = QuantAxis::Token;
            break;
        case KvQuantAxisChoice::Channel:
            quant.k_axis = quant.v_axis = QuantAxis::Channel;
            break;
        case KvQuantAxisChoice::Kivi:
            quant.k_axis = QuantAxis::Channel;
            quant.v_axis = QuantAxis::Token;
            break;
    }
    return quant;
}

void check_kv_quant(const Config& c, const Sizes& s) {
    const KvQuant q = kv_quant_of(c);
    if (!q.on()) return;
    const std::size_t T = s.seq_len, d_k = s.d_k();
    for (QuantAxis axis : {q.k_axis, q.v_axis}) {
        const std::size_t group = quant_group(q, axis, T, d_k);
        if (axis == QuantAxis::Token && d_k % group != 0) {
            throw Error(group_words(c, group) + " does not divide d_k = " + std::to_string(d_k) +
                        ": " + operands_on(q, axis) +
                        " grouped along d_k, within each token's vector");
        }
        if (axis == QuantAxis::Channel && group > T) {
            throw Error(group_words(c, group) + " is longer than the cache of " +
                        std::to_string(T) + " positions: " + operands_on(q, axis) +
                        " grouped along the tokens, and no group would fill");
        }
    }
    if (q.residual > T) {
        throw Error("--kv-residual " + std::to_string(q.residual) +
                    " is larger than the cache: --decode " + std::to_string(T) + " caches " +
                    std::to_string(T) + " positions");
    }
}

}  // namespace mha
