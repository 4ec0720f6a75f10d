// RMSNorm over the last dimension of a strided tensor.

#include "core/ops/rms_norm.h"

#include <cmath>

namespace mha {

void rms_norm_rows(Tensor& x, const Tensor& weight, double eps) {
    const std::size_t last = x.dim() - 1, d = x.size(last), step = x.strides()[last];
    const Tensor w = weight.contiguous();
    const std::size_t rows = x.numel() / d;
    for (std::size_t r = 0; r < rows; ++r) {
        std::size_t offset = 0, rest = r;  // the row's offset from its index in C order
        for (std::size_t k = last; k-- > 0;) {
            offset += (rest % x.size(k)) * x.strides()[k];
            rest /= x.size(k);
        }
        float* row = x.data() + offset;
        double squares = 0.0;
        for (std::size_t i = 0; i < d; ++i) squares += double(row[i * step]) * row[i * step];
        const double inverse = 1.0 / std::sqrt(squares / double(d) + eps);
        for (std::size_t i = 0; i < d; ++i)
            row[i * step] = float(row[i * step] * inverse * w.data()[i]);
    }
}

}  // namespace mha
