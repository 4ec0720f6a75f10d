// RMSNorm over the last dimension of a strided tensor.

#include "core/ops/rms_norm.h"

#include <cmath>
#include <vector>

namespace mha {

namespace {

// The offset of row r (in C order) of x (..., d) from x's first element.
std::size_t row_offset(const Tensor& x, std::size_t r) {
    std::size_t offset = 0, rest = r;
    for (std::size_t k = x.dim() - 1; k-- > 0;) {
        offset += (rest % x.size(k)) * x.strides()[k];
        rest /= x.size(k);
    }
    return offset;
}

}  // namespace

void rms_norm_rows(Tensor& x, const Tensor& weight, double eps) {
    if (any_dry(x, weight)) return;  // a dry run: nothing to normalise
    const std::size_t last = x.dim() - 1, d = x.size(last), step = x.strides()[last];
    const Tensor w = weight.contiguous();
    const std::size_t rows = x.numel() / d;
    for (std::size_t r = 0; r < rows; ++r) {
        float* row = x.data() + row_offset(x, r);
        double squares = 0.0;
        for (std::size_t i = 0; i < d; ++i) squares += double(row[i * step]) * row[i * step];
        const double inverse = 1.0 / std::sqrt(squares / double(d) + eps);
        for (std::size_t i = 0; i < d; ++i)
            row[i * step] = float(row[i * step] * inverse * w.data()[i]);
    }
}

void rms_norm_rows_backward(const Tensor& x, const Tensor& weight, Tensor& dy, Tensor& dweight,
                            double eps) {
    const std::size_t last = x.dim() - 1, d = x.size(last), step = x.strides()[last];
    if (any_dry(x, weight, dy)) {  // a dry run: dweight's shape alone
        dweight = x.dry_result({d});
        return;
    }
    const Tensor w = weight.contiguous();
    const std::size_t rows = x.numel() / d;
    std::vector<double> dw(d, 0.0), n(d), g(d);
    for (std::size_t r = 0; r < rows; ++r) {
        const float* row = x.data() + row_offset(x, r);
        float* grad = dy.data() + r * d;
        double squares = 0.0;
        for (std::size_t i = 0; i < d; ++i) squares += double(row[i * step]) * row[i * step];
        const double inverse = 1.0 / std::sqrt(squares / double(d) + eps);
        double mean_gn = 0.0;
        for (std::size_t i = 0; i < d; ++i) {
            n[i] = row[i * step] * inverse;
            g[i] = double(grad[i]) * w.data()[i];
            dw[i] += grad[i] * n[i];
            mean_gn += g[i] * n[i];
        }
        mean_gn /= double(d);
        for (std::size_t i = 0; i < d; ++i) grad[i] = float((g[i] - n[i] * mean_gn) * inverse);
    }
    dweight = Tensor({d}, std::vector<float>(dw.begin(), dw.end()));
}

}  // namespace mha
