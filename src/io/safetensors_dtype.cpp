// safetensors element types: names, sizes, and the widening of their little-endian bytes to
// float32, decoded bit by bit (never a cast of the buffer in place).

#include "io/bytes.h"
#include "io/safetensors.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace mha::safetensors {

namespace {

using bytes::bit_cast;

const unsigned char* unsigned_bytes(const char* bytes) {
    return reinterpret_cast<const unsigned char*>(bytes);
}

// The fewest significant digits that read back as `value` ("-1e+39", not "-9.99...94e+38").
std::string shortest(double value) {
    char text[32];
    for (int digits = 1; digits <= 17; ++digits) {
        std::snprintf(text, sizeof text, "%.*g", digits, value);
        if (std::strtod(text, nullptr) == value) break;
    }
    return text;
}

// F64 rounded to nearest even; a finite value that rounds to infinity is refused.
float narrow_f64(double value, const std::string& what, std::uint64_t index) {
    const float narrowed = static_cast<float>(value);
    if (std::isinf(narrowed) && !std::isinf(value)) {
        throw Error(what + ": element " + std::to_string(index) + " is " + shortest(value) +
                    ", beyond float32's range (largest 3.4028235e+38); mha computes in float32");
    }
    return narrowed;
}

}  // namespace

const char* dtype_name(DType dtype) {
    switch (dtype) {
        case DType::F64:
            return "F64";
        case DType::F32:
            return "F32";
        case DType::F16:
            return "F16";
        case DType::BF16:
            return "BF16";
    }
    return "?";
}

std::size_t item_size(DType dtype) {
    switch (dtype) {
        case DType::F64:
            return 8;
        case DType::F32:
            return 4;
        case DType::F16:
        case DType::BF16:
            return 2;
    }
    return 0;
}

// IEEE half: 1 sign bit, 5 exponent bits (bias 15), 10 fraction bits. Every half is a float
// exactly: a normal one rebiased (127 - 15), a subnormal one fraction · 2^-24 (a normal
// float), the fraction of a NaN kept in the float's top fraction bits and the NaN made quiet,
// as torch's .float() and the F16C instruction give it.
float f16_to_f32(std::uint16_t bits) {
    const std::uint32_t sign = std::uint32_t(bits >> 15) << 31;
    const std::uint32_t exponent = (bits >> 10) & 0x1F;
    const std::uint32_t fraction = bits & 0x3FF;
    constexpr std::uint32_t quiet = 0x00400000;
    if (exponent == 0x1F && fraction == 0) return bit_cast<float>(sign | 0x7F800000u);
    if (exponent == 0x1F) return bit_cast<float>(sign | 0x7F800000u | quiet | (fraction << 13));
    if (exponent != 0)
        return bit_cast<float>(sign | ((exponent + 127 - 15) << 23) | (fraction << 13));
    const float magnitude = std::ldexp(static_cast<float>(fraction), -24);  // 0 or subnormal
    return sign != 0 ? -magnitude : magnitude;
}

// bfloat16 is the top half of a float32's bits.
float bf16_to_f32(std::uint16_t bits) { return bit_cast<float>(std::uint32_t(bits) << 16); }

void widen(DType dtype, const char* bytes, std::size_t count, float* out, const std::string& what,
           std::uint64_t first_index) {
    const unsigned char* p = unsigned_bytes(bytes);
    switch (dtype) {
        case DType::F32:
            for (std::size_t i = 0; i < count; ++i)
                out[i] = bit_cast<float>(static_cast<std::uint32_t>(bytes::load_le(p + 4 * i, 4)));
            return;
        case DType::F16:
            for (std::size_t i = 0; i < count; ++i)
                out[i] = f16_to_f32(static_cast<std::uint16_t>(bytes::load_le(p + 2 * i, 2)));
            return;
        case DType::BF16:
            for (std::size_t i = 0; i < count; ++i)
                out[i] = bf16_to_f32(static_cast<std::uint16_t>(bytes::load_le(p + 2 * i, 2)));
            return;
        case DType::F64:
            for (std::size_t i = 0; i < count; ++i)
                out[i] = narrow_f64(bit_cast<double>(bytes::load_le(p + 8 * i, 8)), what,
                                    first_index + i);
            return;
    }
}

}  // namespace mha::safetensors
