// Gradient clipping, AdamW and the learning-rate schedule.

#include "core/train/optimizer.h"

#include <algorithm>
#include <cmath>

#include "core/threads/parallel.h"

namespace mha {

bool takes_weight_decay(const std::string& name, std::size_t dims) {
    return dims == 2 && name.find("embedding") == std::string::npos;
}

AdamWMoments adamw_moments(const Shape& shape) { return {Tensor(shape), Tensor(shape)}; }

void adamw_step(Tensor& param, const Tensor& grad, AdamWMoments& moments, std::uint64_t step,
                double lr, double weight_decay, const AdamWSettings& s, std::size_t threads) {
    // PyTorch computes these scalars in double (Python floats) and applies them as float32
    const float decay = float(1.0 - lr * weight_decay);
    const float beta1 = float(s.beta1), one_minus_beta1 = float(1.0 - s.beta1);
    const float beta2 = float(s.beta2), one_minus_beta2 = float(1.0 - s.beta2);
    const double correction1 = 1.0 - std::pow(s.beta1, double(step));
    const float correction2_sqrt = float(std::sqrt(1.0 - std::pow(s.beta2, double(step))));
    const float step_size = float(-(lr / correction1)), eps = float(s.eps);
    const Tensor g = grad.contiguous();
    float* p = param.data();
    float* m = moments.m.data();
    float* v = moments.v.data();
    const std::size_t n = param.numel();
    parallel_for(
        n, threads_for(std::uint64_t(n) * 8, threads), [&](std::size_t begin, std::size_t end) {
            for (std::size_t i = begin; i < end; ++i) {
                const float gi = g.data()[i];
                p[i] = p[i] * decay;
                m[i] = m[i] * beta1 + one_minus_beta1 * gi;
                v[i] = v[i] * beta2 + one_minus_beta2 * gi * gi;
                const float denominator = std::sqrt(v[i]) / correction2_sqrt + eps;
                p[i] = p[i] + step_size * m[i] / denominator;  // addcdiv_: (value · m) / denom
            }
        });
}

double clip_grad_norm(const std::vector<Tensor*>& grads, double max_norm) {
    double squares = 0.0;
    for (const Tensor* grad : grads) {
        double sum = 0.0;
        const float* values = grad->data();
        const std::size_t n = grad->numel();
        for (std::size_t i = 0; i < n; ++i) sum += double(values[i]) * values[i];
        squares += sum;
    }
    const double norm = std::sqrt(squares);
    const float scale = float(std::min(1.0, max_norm / (norm + 1e-6)));
    for (Tensor* grad : grads) {
        float* values = grad->data();
        const std::size_t n = grad->numel();
        for (std::size_t i = 0; i < n; ++i) values[i] *= scale;
    }
    return norm;
}

double learning_rate(std::size_t step, std::size_t steps, double peak, std::size_t warmup) {
    if (step < warmup) return peak * double(step + 1) / double(warmup);
    const double progress =
        double(step - warmup) / double(std::max<std::size_t>(1, steps - warmup));
    return peak * (0.1 + 0.9 * 0.5 * (1.0 + std::cos(M_PI * progress)));
}

}  // namespace mha
