// LayerNorm, GELU and the residual sum.

#include "core/ops/block_ops.h"

#include <cmath>

#include "core/error.h"

namespace mha {

Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta) {
    const std::size_t E = x.size(x.dim() - 1), rows = x.numel() / E;
    Tensor y(x.shape());
    for (std::size_t r = 0; r < rows; ++r) {
        const float* in = x.data() + r * E;
        float* out = y.data() + r * E;
        double mean = 0.0;
        for (std::size_t i = 0; i < E; ++i) mean += in[i];
        mean /= double(E);
        double variance = 0.0;
        for (std::size_t i = 0; i < E; ++i) variance += (in[i] - mean) * (in[i] - mean);
        variance /= double(E);
        const double inverse = 1.0 / std::sqrt(variance + double(layer_norm_eps));
        for (std::size_t i = 0; i < E; ++i) {
            out[i] = float((in[i] - mean) * inverse * gamma.data()[i] + beta.data()[i]);
        }
    }
    return y;
}

Tensor gelu(const Tensor& u) {
    Tensor y(u.shape());
    const double inverse_sqrt2 = 1.0 / std::sqrt(2.0);
    for (std::size_t i = 0; i < u.numel(); ++i) {
        const double v = u.data()[i];
        y.data()[i] = float(0.5 * v * (1.0 + std::erf(v * inverse_sqrt2)));
    }
    return y;
}

Tensor add(const Tensor& a, const Tensor& b) {
    Tensor y(a.shape());
    for (std::size_t i = 0; i < a.numel(); ++i) y.data()[i] = a.data()[i] + b.data()[i];
    return y;
}

void check_in_float32(const Tensor& t, const std::string& what) {
    const Tensor packed = t.contiguous();  // no copy: project() and add() return it contiguous
    const float* values = packed.data();
    for (std::size_t i = 0; i < packed.numel(); ++i) {
        if (!std::isfinite(values[i])) {
            throw Error("a value of " + what + " overflows float32 at flat index " +
                        std::to_string(i) + " of " + to_string(packed.shape()) +
                        ": the inputs or weights are too large for float32");
        }
    }
}

}  // namespace mha
