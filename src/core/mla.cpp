// MLA: projections, the latent, the decoupled RoPE key, then attention in the naive or the
// absorbed form. Plain loops, accumulated in double.

#include "core/mla.h"

#include <algorithm>
#include <cmath>
#include <vector>
#include <string>

#include "core/checked.h"
#include "core/error.h"
#include "core/ops.h"
#include "core/rms_norm.h"

namespace mha {

static std::string dims(const Tensor& t) { return to_string(t.shape()); }

MlaSizes mla_sizes(const MlaWeights& w, std::size_t heads) {
    MlaSizes s{};
    s.heads = heads;
    s.d_model = w.w_q.size(1);
    s.d_latent = w.kv_norm.size(0);
    if (heads == 0 || w.w_kv_a.size(0) <= s.d_latent || w.w_q.size(0) % heads != 0 ||
        w.w_kv_b.size(0) % heads != 0) {
        throw Error("MLA: weights q " + dims(w.w_q) + ", kv_a " + dims(w.w_kv_a) + ", kv_b " +
                    dims(w.w_kv_b) + " do not split into " + std::to_string(heads) + " heads");
    }
    s.d_rope = w.w_kv_a.size(0) - s.d_latent;
    if (w.w_q.size(0) / heads <= s.d_rope || w.w_kv_b.size(0) / heads <= w.w_q.size(0) / heads - s.d_rope) {
        throw Error("MLA: q " + dims(w.w_q) + " and kv_b " + dims(w.w_kv_b) +
                    " leave no room for the RoPE part d_R = " + std::to_string(s.d_rope));
    }
    s.d_nope = w.w_q.size(0) / heads - s.d_rope;
    s.d_v = w.w_kv_b.size(0) / heads - s.d_nope;
    if (w.w_kv_a.size(1) != s.d_model || w.w_kv_b.size(1) != s.d_latent ||
        w.w_o.shape() != Shape{s.d_model, heads * s.d_v}) {
        throw Error("MLA: kv_a " + dims(w.w_kv_a) + ", kv_b " + dims(w.w_kv_b) + " and o " +
                    dims(w.w_o) + " do not fit d_model = " + std::to_string(s.d_model) +
                    ", d_c = " + std::to_string(s.d_latent) + ", h·d_v = " +
                    std::to_string(heads * s.d_v));
    }
    if (s.d_rope % 2 != 0) throw Error("RoPE needs an even d_k, got d_R = " + std::to_string(s.d_rope));
    return s;
}

// x (rows, in) Wᵀ -> (rows, out), without bias.
static Tensor linear(const Tensor& x, const Tensor& w) {
    const std::size_t rows = x.numel() / w.size(1);
    Tensor y({rows, w.size(0)});
    linear_rows(x.contiguous().view({rows, w.size(1)}), w, Tensor(), y, 0, rows);
    return y;
}

// Columns [first, first + width) of a (rows, cols) matrix, copied: (rows, width).
static Tensor columns(const Tensor& m, std::size_t first, std::size_t width) {
    Tensor out({m.size(0), width});
    for (std::size_t r = 0; r < m.size(0); ++r) {
        const float* from = m.data() + r * m.size(1) + first;
        std::copy(from, from + width, out.data() + r * width);
    }
    return out;
}

// a b as a new (a.rows, b.cols) row-major buffer.
static std::vector<float> product(const MatrixView& a, const MatrixView& b) {
    std::vector<float> c(a.rows * b.cols);
    matmul(a, b, c.data(), b.cols);
    return c;
}

static MatrixView rows_of(const float* data, std::size_t rows, std::size_t cols, std::size_t stride) {
    return {data, rows, cols, stride, 1};
}

// A projection y (B·N, width) that passed float32's range: an Error naming its first row.
static void check_finite(const Tensor& y, const char* name, std::size_t seq_len) {
    const std::size_t width = y.size(1);
    for (std::size_t i = 0; i < y.numel(); ++i) {
        if (!std::isfinite(y.data()[i])) {
            const std::size_t row = i / width;
            throw Error(std::string(name) + " overflows float32 at batch " +
                        std::to_string(row / seq_len) + ", position " +
                        std::to_string(row % seq_len) +
                        ": the inputs or weights are too large for float32");
        }
    }
}

MlaResult mla_forward(const MlaWeights& w, const Tensor& x, std::size_t heads, bool causal,
                      const Rope& rope, MlaForm form) {
    const MlaSizes s = mla_sizes(w, heads);
    if (x.dim() != 3 || x.size(2) != s.d_model) {
        throw Error("MLA: input " + dims(x) + " is not (B, N, d_model = " + std::to_string(s.d_model) + ")");
    }
    const std::size_t B = x.size(0), N = x.size(1), h = heads;
    const std::size_t d_h = s.d_nope, d_R = s.d_rope, d_c = s.d_latent, d_v = s.d_v;
    const std::size_t q_width = d_h + d_R;
    MlaResult result;
    const Tensor a = linear(x, w.w_kv_a);  // (B·N, d_c + d_R)
    check_finite(a, "kv_a_proj_with_mqa", N);
    result.kv_a = a.view({B, N, d_c + d_R});
    result.latent = columns(a, 0, d_c).view({B, N, d_c});
    rms_norm_rows(result.latent, w.kv_norm);
    result.rope_key = columns(a, d_c, d_R).view({B, N, d_R});
    Tensor k_pe = result.rope_key.view({B, 1, N, d_R});
    apply_rope(k_pe, rope, 0);
    const Tensor queries = linear(x, w.w_q);  // (B·N, h·(d_h + d_R))
    check_finite(queries, "q_proj", N);
    result.queries = queries.view({B, N, h * q_width});
    const Tensor q = result.queries.view({B, N, h, q_width}).transpose(1, 2);  // (B, h, N, d_h + d_R)
    Tensor q_rope_part({B, h, N, d_R});  // the last d_R features of each head's q, rotated
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t hh = 0; hh < h; ++hh)
            for (std::size_t n = 0; n < N; ++n)
                for (std::size_t r = 0; r < d_R; ++r)
                    q_rope_part.data()[((b * h + hh) * N + n) * d_R + r] = q.at({b, hh, n, d_h + r});
    apply_rope(q_rope_part, rope, 0);

    const float scale = float(1.0 / std::sqrt(double(q_width)));
    result.weights = Tensor({B, h, N, N});
    Tensor context({B, N, h * d_v});  // the heads side by side, before W_o
    for (std::size_t b = 0; b < B; ++b) {
        const MatrixView latent = rows_of(result.latent.data() + b * N * d_c, N, d_c, d_c);
        const MatrixView key_pe = rows_of(result.rope_key.data() + b * N * d_R, N, d_R, d_R);
        for (std::size_t hh = 0; hh < h; ++hh) {
            const float* w_head = w.w_kv_b.data() + hh * (d_h + d_v) * d_c;
            const MatrixView w_uk = rows_of(w_head, d_h, d_c, d_c);             // (d_h, d_c)
            const MatrixView w_uv = rows_of(w_head + d_h * d_c, d_v, d_c, d_c);  // (d_v, d_c)
            const MatrixView q_nope = head_matrix(q, b, hh);  // (N, d_h + d_R), first d_h used
            const MatrixView q_head{q_nope.data, N, d_h, q_nope.row_stride, q_nope.col_stride};
            const MatrixView query_pe = head_matrix(q_rope_part, b, hh);  // (N, d_R)
            std::vector<float> scores = product(query_pe, key_pe.transposed());  // (N, N)
            std::vector<float> nope;  // (N, N)
            if (form == MlaForm::Naive) {
                const std::vector<float> keys = product(latent, w_uk.transposed());  // (N, d_h)
                nope = product(q_head, rows_of(keys.data(), N, d_h, d_h).transposed());
            } else {
                const std::vector<float> q_latent = product(q_head, w_uk);  // (N, d_c)
                nope = product(rows_of(q_latent.data(), N, d_c, d_c), latent.transposed());
            }
            float* p = result.weights.data() + (b * h + hh) * N * N;  // (N, N)
            for (std::size_t i = 0; i < N * N; ++i) {
                p[i] = (nope[i] + scores[i]) * scale;
                if (!std::isfinite(p[i])) {
                    throw Error("the score of batch " + std::to_string(b) + ", head " +
                                std::to_string(hh) + ", query " + std::to_string(i / N) +
                                ", key " + std::to_string(i % N) +
                                " overflows float32; the inputs or weights are too large for "
                                "float32");
                }
            }
            if (causal) apply_causal(p, N, N);
            softmax_rows(p, N, N, false);
            const MatrixView weights = rows_of(p, N, N, N);
            std::vector<float> head_context;  // (N, d_v)
            if (form == MlaForm::Naive) {
                const std::vector<float> values = product(latent, w_uv.transposed());  // (N, d_v)
                head_context = product(weights, rows_of(values.data(), N, d_v, d_v));
            } else {
                const std::vector<float> mixed = product(weights, latent);  // (N, d_c)
                head_context = product(rows_of(mixed.data(), N, d_c, d_c), w_uv.transposed());
            }
            for (std::size_t n = 0; n < N; ++n) {
                std::copy(head_context.begin() + n * d_v, head_context.begin() + (n + 1) * d_v,
                          context.data() + (b * N + n) * h * d_v + hh * d_v);
            }
        }
    }
    result.output = linear(context, w.w_o).view({B, N, s.d_model});
    return result;
}

CachePerToken cache_per_token(const MlaSizes& s, std::size_t kv_heads) {
    const std::uint64_t d_h = s.d_nope;
    return {2 * s.heads * d_h, 2 * kv_heads * d_h, 2 * d_h, std::uint64_t(s.d_latent) + s.d_rope};
}

std::size_t ledger_kv_heads(std::size_t heads) {
    if (heads > 8 && heads % 8 == 0) return 8;
    for (std::size_t g = heads / 2; g > 1; --g) {
        if (heads % g == 0) return g;
    }
    return 0;
}

MlaSizes seeded_mla_sizes(std::size_t d_model, std::size_t heads, std::size_t d_latent,
                          std::size_t d_rope) {
    const std::size_t d_k = d_model / heads;
    return {d_model, heads, d_k, d_rope, d_latent, d_k};
}

std::uint64_t mla_parameter_count(const MlaSizes& s) {
    const std::string what = "the parameter count";
    const std::uint64_t h = s.heads;
    return checked_sum({checked_product({h, s.d_nope + s.d_rope, s.d_model}, what),
                        checked_product({s.d_latent + s.d_rope, s.d_model}, what), s.d_latent,
                        checked_product({h, s.d_nope + s.d_v, s.d_latent}, what),
                        checked_product({s.d_model, h, s.d_v}, what)},
                       what);
}

std::uint64_t mla_bytes(const MlaSizes& s, std::size_t batch, std::size_t seq_len) {
    const std::string what = "the memory for MLA";
    const std::uint64_t B = batch, N = seq_len, h = s.heads;
    const std::uint64_t per_form = checked_sum(
        {checked_product({B, N, h, s.d_nope + s.d_rope}, what),         // queries
         checked_product({B, N, 2 * (s.d_latent + s.d_rope)}, what),    // kv_a, latent, k_pe
         checked_product({B, h, N, N}, what),                           // weights
         checked_product({B, N, h, s.d_v + s.d_rope}, what),            // context, q_pe
         checked_product({B, N, s.d_model}, what),                      // output
         checked_product({4, N, std::max({N, s.d_latent, s.d_nope, s.d_v})}, what)},  // per head
        what);
    return checked_product({2, sizeof(float), per_form}, what);
}

}  // namespace mha
