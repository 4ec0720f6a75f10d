#pragma once
// e^x for x <= 0 as a polynomial on float32 lanes: inlined into every kernel variant's loops
// (core/kernels/kernels.cpp, core/layers/gelu.cpp), which compilers then vectorise.

#include <cstdint>
#include <cstring>

namespace mha {

// e^x for x <= 0: 2^n e^r with n = round(x log2 e), |r| <= ln2 / 2, r's series to
// degree 7 (relative error < 1e-7). Below -87 (or -inf) the result is 0.
inline __attribute__((always_inline)) float exp_nonpositive_t(float x) {
    const float magic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
    const float t = x * 1.44269504f + magic;
    const float n = t - magic;
    const float r = (x - n * 0.693145752f) - n * 1.42860677e-6f;  // ln 2 in two parts
    float p = 1.0f / 5040;
    p = p * r + 1.0f / 720;
    p = p * r + 1.0f / 120;
    p = p * r + 1.0f / 24;
    p = p * r + 1.0f / 6;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    std::uint32_t t_bits, magic_bits;
    std::memcpy(&t_bits, &t, sizeof t);
    std::memcpy(&magic_bits, &magic, sizeof magic);
    const std::uint32_t scale_bits = (t_bits - magic_bits + 127u) << 23;  // 2^n
    float two_n;
    std::memcpy(&two_n, &scale_bits, sizeof two_n);
    return x < -87.0f ? 0.0f : p * two_n;
}

}  // namespace mha
