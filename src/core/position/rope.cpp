// RoPE: the inverse frequencies, the pairs of each layout, the rotation, the row permutation.

#include "core/position/rope.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace mha {

std::vector<double> rope_inv_freq(std::size_t d_k, double theta, std::size_t first_pairs) {
    std::vector<double> inv_freq(std::min(d_k / 2, first_pairs));
    for (std::size_t i = 0; i < inv_freq.size(); ++i) {
        inv_freq[i] = std::pow(theta, -2.0 * double(i) / double(d_k));
    }
    return inv_freq;
}

std::vector<double> rope_inv_freq(std::size_t d_k, const Rope& rope, std::size_t first_pairs) {
    std::vector<double> inv_freq = rope_inv_freq(d_k, rope.theta, first_pairs);
    if (rope.scaling == RopeScaling::Linear) {
        for (double& f : inv_freq) f /= rope.factor;
    } else if (rope.scaling == RopeScaling::Llama3) {
        const double pi = 3.14159265358979323846;
        const double long_wave = rope.original_context / rope.low_freq_factor;
        const double short_wave = rope.original_context / rope.high_freq_factor;
        for (double& f : inv_freq) {
            const double wavelength = 2 * pi / f;
            if (wavelength > long_wave) {
                f /= rope.factor;
            } else if (wavelength >= short_wave) {  // between the two: a smooth blend
                const double smooth = (rope.original_context / wavelength - rope.low_freq_factor) /
                                      (rope.high_freq_factor - rope.low_freq_factor);
                f = (1 - smooth) * f / rope.factor + smooth * f;
            }
        }
    }
    return inv_freq;
}

std::pair<std::size_t, std::size_t> rope_pair(RopeLayout layout, std::size_t d_k, std::size_t i) {
    return layout == RopeLayout::Half ? std::make_pair(i, i + d_k / 2)
                                      : std::make_pair(2 * i, 2 * i + 1);
}

void apply_rope(Tensor& x, const Rope& rope, std::size_t first_position, bool inverse) {
    const std::size_t last = x.dim() - 1, d_k = x.size(last);
    if (d_k % 2 != 0) throw Error("RoPE needs an even d_k, got " + std::to_string(d_k));
    if (x.dry()) return;  // a dry run: no angles, no table
    const std::size_t pairs = d_k / 2, length = x.size(last - 1);
    const std::vector<double> inv_freq = rope_inv_freq(d_k, rope);
    std::vector<double> cos_table(length * pairs), sin_table(length * pairs);  // (L, d_k/2)
    for (std::size_t l = 0; l < length; ++l) {
        for (std::size_t i = 0; i < pairs; ++i) {
            const double angle = double(first_position + l) * inv_freq[i];
            cos_table[l * pairs + i] = std::cos(angle);
            sin_table[l * pairs + i] = inverse ? -std::sin(angle) : std::sin(angle);
        }
    }
    const Strides& s = x.strides();
    const std::size_t step = s[last], matrices = x.numel() / (length * d_k);
    for (std::size_t m = 0; m < matrices; ++m) {
        std::size_t offset = 0, rest = m;  // the (L, d_k) matrix's offset from its C-order index
        for (std::size_t d = last - 1; d-- > 0;) {
            offset += (rest % x.size(d)) * s[d];
            rest /= x.size(d);
        }
        for (std::size_t l = 0; l < length; ++l) {
            float* row = x.data() + offset + l * s[last - 1];
            for (std::size_t i = 0; i < pairs; ++i) {
                const auto [ia, ib] = rope_pair(rope.layout, d_k, i);
                const double a = row[ia * step], c = cos_table[l * pairs + i];
                const double b = row[ib * step], sn = sin_table[l * pairs + i];
                row[ia * step] = float(a * c - b * sn);
                row[ib * step] = float(a * sn + b * c);
            }
        }
    }
}

std::vector<std::size_t> rope_half_order(std::size_t d_k) {
    std::vector<std::size_t> order(d_k);
    for (std::size_t i = 0; i < d_k / 2; ++i) {
        order[i] = 2 * i;
        order[i + d_k / 2] = 2 * i + 1;
    }
    return order;
}

Tensor reorder_head_rows(const Tensor& w, std::size_t heads,
                         const std::vector<std::size_t>& order) {
    const Tensor source = w.contiguous();
    const std::size_t rows = w.size(0), width = w.numel() / rows, d_k = order.size();
    if (rows != heads * d_k) {
        throw Error("reorder_head_rows: " + std::to_string(rows) + " rows are not " +
                    std::to_string(heads) + " heads of " + std::to_string(d_k));
    }
    Tensor out(w.shape());
    for (std::size_t h = 0; h < heads; ++h) {
        for (std::size_t r = 0; r < d_k; ++r) {
            const float* from = source.data() + (h * d_k + order[r]) * width;
            std::copy(from, from + width, out.data() + (h * d_k + r) * width);
        }
    }
    return out;
}

}  // namespace mha
