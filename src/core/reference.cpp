// The maths of multi-head attention in plain loops, one thread, in double: each operation's
// forward and, right below it, its backward, every adjoint line quoting the forward line it
// inverts; then the whole pass forward (steps 1-14 and the gate of --gate, numbered as the trace numbers them) and
// backward (b14 to b1). The clean, minimal reference: the fast kernels, every form (per-head,
// fused QKV, decode, streaming) and --gradcheck's finite differences are checked against it.
//
// Shape legend: B batch, N queries, M_in given keys and values, M = M_in + the appended
// positions (bias_k, add_zero_attn), d_model, h query heads, G key/value heads (query head i
// reads head i / (h / G)), d_k per head. Q is kept (B, N, h, d_k) and K, V (B, M, G, d_k),
// row-major: a head of one position is a (d_k) slice. Query n sits at position n + M − N.
// The backward computes the gradients of L = Σ output ∘ dO; dX is ∂L/∂X.

#include "core/reference.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/checked.h"
#include "core/kv_heads.h"
#include "core/ops/rms_norm.h"
#include "core/pass/shape_checks.h"
#include "core/position/position_bias.h"
#include "core/position/rope.h"

namespace mha {

namespace {

using Vec = std::vector<double>;
constexpr double inf = std::numeric_limits<double>::infinity();

// ---- steps 1-3 and 14, linear: y = x Wᵀ + b ----------------------------------------------

// x (rows, in), w (out, in), b (out) or absent -> y (rows, out)
Vec linear_forward(const Vec& x, std::size_t rows, const DoubleTensor& w, const DoubleTensor& b) {
    const std::size_t out = w.shape[0], in = w.shape[1];
    Vec y(rows * out);
    for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t o = 0; o < out; ++o) {
            double sum = b.absent() ? 0.0 : b.values[o];
            for (std::size_t c = 0; c < in; ++c) sum += x[r * in + c] * w.values[o * in + c];
            y[r * out + o] = sum;
        }
    }
    return y;
}

// x (rows, in), w (out, in), dy (rows, out) -> dx (rows, in), dw (out, in), db (out) added to
void linear_backward(const Vec& x, std::size_t rows, const DoubleTensor& w, const Vec& dy, Vec& dx,
                     DoubleTensor& dw, DoubleTensor& db) {
    const std::size_t out = w.shape[0], in = w.shape[1];
    for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t o = 0; o < out; ++o) {
            const double g = dy[r * out + o];
            if (!db.absent()) db.values[o] += g;  // of: sum = b[o]
            for (std::size_t c = 0; c < in; ++c) {
                dx[r * in + c] += g * w.values[o * in + c];  // of: sum += x[r, c] · w[o, c]
                dw.values[o * in + c] += g * x[r * in + c];  // of the same
            }
        }
    }
}

// ---- step 5, QK-norm: RMSNorm of each (d_k) row, y = x · r · w, r = 1/sqrt(mean(x²) + ε) --

// x (rows, d) -> y (rows, d); inv_rms (rows) keeps r for the backward
Vec rms_norm_forward(const Vec& x, std::size_t d, const DoubleTensor& w, Vec& inv_rms) {
    const std::size_t rows = x.size() / d;
    Vec y(x.size());
    inv_rms.assign(rows, 0.0);
    for (std::size_t r = 0; r < rows; ++r) {
        double squares = 0.0;
        for (std::size_t c = 0; c < d; ++c) squares += x[r * d + c] * x[r * d + c];
        inv_rms[r] = 1.0 / std::sqrt(squares / double(d) + rms_norm_eps);
        for (std::size_t c = 0; c < d; ++c) y[r * d + c] = x[r * d + c] * inv_rms[r] * w.values[c];
    }
    return y;
}

// x, dy (rows, d) -> dx (rows, d); dw (d) added to. With u = x r and du = dy ∘ w,
// dx = r (du − u · mean(du ∘ u)): the direct term and the one through r.
Vec rms_norm_backward(const Vec& x, std::size_t d, const DoubleTensor& w, const Vec& inv_rms,
                      const Vec& dy, DoubleTensor& dw) {
    Vec dx(x.size());
    for (std::size_t r = 0; r < inv_rms.size(); ++r) {
        double mean_du_u = 0.0;
        for (std::size_t c = 0; c < d; ++c) {
            const double u = x[r * d + c] * inv_rms[r];
            dw.values[c] += dy[r * d + c] * u;  // of: y = u · w[c]
            mean_du_u += dy[r * d + c] * w.values[c] * u;
        }
        mean_du_u /= double(d);
        for (std::size_t c = 0; c < d; ++c) {
            const double u = x[r * d + c] * inv_rms[r];
            // of: y = x · r · w, r = 1/sqrt(Σ x² / d + ε)
            dx[r * d + c] = inv_rms[r] * (dy[r * d + c] * w.values[c] - u * mean_du_u);
        }
    }
    return dx;
}

// ---- step 5, RoPE: each pair (a, b) of a head rotated by the angle position · inv_freq[i] --

// x (B, L, H, d_k), row l at position first + l, rotated in place by sign · angle. The forward
// rotates by +angle; its adjoint, the transposed rotation, is the rotation by −angle.
void rope_rotate(Vec& x, std::size_t L, std::size_t H, std::size_t d_k, const Rope& rope,
                 std::size_t first, double sign) {
    const std::vector<double> inv_freq = rope_inv_freq(d_k, rope.theta);
    const std::size_t rows = x.size() / (L * H * d_k);
    for (std::size_t b = 0; b < rows; ++b) {
        for (std::size_t l = 0; l < L; ++l) {
            for (std::size_t head = 0; head < H; ++head) {
                double* row = x.data() + ((b * L + l) * H + head) * d_k;
                for (std::size_t i = 0; i < d_k / 2; ++i) {
                    const auto pair = rope_pair(rope.layout, d_k, i);
                    const double angle = sign * double(first + l) * inv_freq[i];
                    const double a = row[pair.first], c = row[pair.second];
                    row[pair.first] = a * std::cos(angle) - c * std::sin(angle);
                    row[pair.second] = a * std::sin(angle) + c * std::cos(angle);
                }
            }
        }
    }
}

// ---- step 6, one query's scores: s_j = q · k_j over the M keys ------------------------------

// M rows of d_k, `stride` apart: one K or V head's rows in (B, M, G, d_k)
struct HeadRows {
    const double* data;
    std::size_t stride;
    const double* operator[](std::size_t j) const { return data + j * stride; }
};

// q (d_k), keys (M, d_k) -> s (M)
void scores_forward(const double* q, HeadRows keys, std::size_t m, std::size_t d_k, double* s) {
    for (std::size_t j = 0; j < m; ++j) {
        double dot = 0.0;
        for (std::size_t d = 0; d < d_k; ++d) dot += q[d] * keys[j][d];
        s[j] = dot;
    }
}

// ds (M) -> dq (d_k) added to, dk (M rows of d_k, `stride` apart) added to
void scores_backward(const double* q, HeadRows keys, const double* ds, std::size_t m,
                     std::size_t d_k, double* dq, double* dk, std::size_t stride) {
    for (std::size_t j = 0; j < m; ++j) {
        for (std::size_t d = 0; d < d_k; ++d) {
            dq[d] += ds[j] * keys[j][d];         // of: dot += q[d] · k_j[d]
            dk[j * stride + d] += ds[j] * q[d];  // of the same
        }
    }
}

// ---- step 7, the soft-cap: s' = C tanh(s / C) ---------------------------------------------

// s replaced by s'; returns t = tanh(s / C), kept for the backward
double softcap_forward(double& s, double cap) {
    const double t = std::tanh(s / cap);
    s = cap * t;
    return t;
}

// ds' -> ds
double softcap_backward(double ds, double t) { return ds * (1.0 - t * t); }  // of: s' = C tanh(s/C)

// ---- step 8, the masks: what they add to score (n, j) of head i in batch b ----------------

// Additive and constant in every tensor differentiated: the adjoint passes the gradient through,
// and a −inf entry leaves p = 0, which softmax_row_backward turns into a zero gradient.
struct MaskTerms {
    const Masks& masks;
    const Sizes& s;  // M_in: the masks' own width
    std::size_t m;   // M: with the appended positions, which the masks leave visible
    std::vector<double> slopes;

    double operator()(std::size_t b, std::size_t i, std::size_t n, std::size_t j) const {
        const std::size_t N = s.seq_len, p = n + m - N;  // the query's position
        double add = 0.0;
        if (masks.has_attn_mask() && j < s.kv_len) {
            const Tensor& a = masks.attn_mask;
            const bool per_head = a.dim() == 3 && a.size(0) == s.batch * s.heads;
            const std::size_t plane = a.dim() == 2 ? 0 : per_head ? b * s.heads + i : b;
            add += a.data()[(plane * N + n) * s.kv_len + j];
        }
        if (masks.has_key_padding() && j < s.kv_len)
            add += masks.key_padding.data()[b * s.kv_len + j];
        if (masks.alibi) add -= slopes[i] * std::fabs(double(p) - double(j));
        if (masks.causal && j >= causal_key_end(n, N, m, masks.causal_align)) add = -inf;
        if (masks.window > 0 && !window_allows({masks.window, masks.sinks}, p, j)) add = -inf;
        return add;
    }
};

// ---- step 9, softmax: p = exp(s − max) / Σ exp(s − max) ------------------------------------

// s (m) -> p (m). Returns whether every key was blocked (−inf): then p is NaN, as PyTorch
// gives, or zeros.
bool softmax_row(const double* s, double* p, std::size_t m, bool zero_masked_rows) {
    if (m == 0) return false;
    double max = -inf;
    for (std::size_t j = 0; j < m; ++j) max = std::max(max, s[j]);
    if (max == -inf) {
        const double fill = zero_masked_rows ? 0.0 : std::numeric_limits<double>::quiet_NaN();
        for (std::size_t j = 0; j < m; ++j) p[j] = fill;
        return true;
    }
    double sum = 0.0;
    for (std::size_t j = 0; j < m; ++j) sum += p[j] = std::exp(s[j] - max);
    for (std::size_t j = 0; j < m; ++j) p[j] /= sum;
    return false;
}

}  // namespace

// ∂p_j/∂s_i = p_i (δ_ij − p_j), so ds_i = p_i (dp_i − Σ_j dp_j p_j); a blocked key has p = 0 and
// gets no gradient, a zeroed row none at all
void softmax_row_backward(const double* p, const double* dp, double* ds, std::size_t m) {
    double rowsum = 0.0;  // what the shared sum passes back
    for (std::size_t j = 0; j < m; ++j) rowsum += dp[j] * p[j];
    for (std::size_t j = 0; j < m; ++j) ds[j] = p[j] * (dp[j] - rowsum);  // of: p_j /= sum
}

void softmax_row_backward_jacobian(const double* p, const double* dp, double* ds, std::size_t m) {
    std::vector<double> jacobian(m * m);  // (m, m): ∂p_j/∂s_i
    for (std::size_t i = 0; i < m; ++i) {
        for (std::size_t j = 0; j < m; ++j)
            jacobian[i * m + j] = (i == j ? p[i] : 0.0) - p[i] * p[j];
    }
    for (std::size_t i = 0; i < m; ++i) {
        double sum = 0.0;
        for (std::size_t j = 0; j < m; ++j) sum += jacobian[i * m + j] * dp[j];
        ds[i] = sum;
    }
}

namespace {

// ---- step 10, one query's context: c = Σ_j p_j v_j ----------------------------------------

// p (M), values (M, d_k) -> c (d_k), added to
void context_forward(const double* p, HeadRows values, std::size_t m, std::size_t d_k, double* c) {
    for (std::size_t j = 0; j < m; ++j) {
        for (std::size_t d = 0; d < d_k; ++d) c[d] += p[j] * values[j][d];
    }
}

// dc (d_k) -> dp (M) written, dv (M rows of d_k, `stride` apart) added to
void context_backward(const double* p, HeadRows values, const double* dc, std::size_t m,
                      std::size_t d_k, double* dp, double* dv, std::size_t stride) {
    for (std::size_t j = 0; j < m; ++j) {
        double dot = 0.0;
        for (std::size_t d = 0; d < d_k; ++d) {
            dot += dc[d] * values[j][d];         // of: c[d] += p_j · v_j[d]
            dv[j * stride + d] += p[j] * dc[d];  // of the same
        }
        dp[j] = dot;
    }
}

// ---- step 3, the appended key/value positions: bias_k, bias_v, then a zero row ------------

// K or V projected (B, M_in, G·d_k) -> (B, M, G·d_k): the bias row, then the zero row
Vec append_rows(const Vec& x, std::size_t B, std::size_t m_in, std::size_t m, std::size_t width,
                const DoubleTensor& bias) {
    Vec out(B * m * width, 0.0);
    for (std::size_t b = 0; b < B; ++b) {
        std::copy(x.begin() + b * m_in * width, x.begin() + (b + 1) * m_in * width,
                  out.begin() + b * m * width);
        if (!bias.absent()) {
            std::copy(bias.values.begin(), bias.values.end(), out.begin() + (b * m + m_in) * width);
        }
    }
    return out;
}

// dK or dV (B, M, G·d_k) -> (B, M_in, G·d_k); the bias row's gradient summed over the batch
// into d_bias (width) (the zero row has no parameter)
Vec drop_appended(const Vec& dx, std::size_t B, std::size_t m_in, std::size_t m, std::size_t width,
                  DoubleTensor& d_bias) {
    Vec out(B * m_in * width);
    for (std::size_t b = 0; b < B; ++b) {
        std::copy(dx.begin() + b * m * width, dx.begin() + (b * m + m_in) * width,
                  out.begin() + b * m_in * width);  // of: copy(x -> out)
        if (d_bias.absent()) continue;
        for (std::size_t c = 0; c < width; ++c)  // of: copy(bias -> out)
            d_bias.values[c] += dx[(b * m + m_in) * width + c];
    }
    return out;
}

// ---- step 13 gated (--gate): concat = O ∘ σ(x_q W_gᵀ + b_g) ------------------------------

// x (rows, d_model) -> gate (rows, width) = σ(x W_gᵀ + b_g), width h·d_k or h
Vec gate_of(const Vec& x, std::size_t rows, const DoubleTensor& w, const DoubleTensor& b) {
    Vec gate = linear_forward(x, rows, w, b);
    for (double& g : gate) g = 1.0 / (1.0 + std::exp(-g));
    return gate;
}

// o (rows, W), gate (rows, width) -> concat (rows, W): column e of a row scaled by gate e
// (element-wise, width = W) or by its head's gate e / d_k (head-wise, width = h)
Vec gate_forward(const Vec& o, const Vec& gate, std::size_t rows, std::size_t width) {
    const std::size_t W = o.size() / rows, per = W / width;
    Vec concat(o.size());
    for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t e = 0; e < W; ++e)
            concat[r * W + e] = o[r * W + e] * gate[r * width + e / per];
    }
    return concat;
}

// its adjoint: d_o (rows, W) and d_pre (rows, width), the gradient before the sigmoid
void gate_backward(const Vec& o, const Vec& gate, const Vec& d_concat, std::size_t rows,
                   std::size_t width, Vec& d_o, Vec& d_pre) {
    const std::size_t W = o.size() / rows, per = W / width;
    d_pre.assign(rows * width, 0.0);
    for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t e = 0; e < W; ++e) {
            const double g = gate[r * width + e / per];
            d_o[r * W + e] = d_concat[r * W + e] * g;  // of: concat = o · g
            d_pre[r * width + e / per] += d_concat[r * W + e] * o[r * W + e];  // of the same
        }
        for (std::size_t j = 0; j < width; ++j) {  // of: g = σ(pre), σ' = g (1 − g)
            const double g = gate[r * width + j];
            d_pre[r * width + j] *= g * (1.0 - g);
        }
    }
}

// ---- the pass forward, keeping what the backward reads ------------------------------------

struct Tape {
    Vec x_q, x_k, x_v;         // (B, N, d_model), (B, M_in, kdim), (B, M_in, vdim)
    Vec q_proj, k_proj;        // (B, N, h, d_k), (B, M, G, d_k): before QK-norm and RoPE
    Vec q_inv_rms, k_inv_rms;  // (B, N, h), (B, M, G): QK-norm's r
    Vec q, k, v;               // (B, N, h, d_k), (B, M, G, d_k), (B, M, G, d_k): as scored
    Vec tanh;                  // (B, h, N, M): the soft-cap's t
    Vec p;                     // (B, h, N, M): the attention weights
    Vec context;               // (B, N, h, d_k): the concat, ablated head zeroed
    Vec gate;                  // (B, N, h·d_k) or (B, N, h): σ(x_q W_gᵀ + b_g); empty without
    Vec concat;                // (B, N, h·d_k): what W_o reads, the context gated (or not)
    Vec output;                // (B, N, d_model)
    std::size_t m = 0;         // M
    double factor = 1.0;       // step 7
    bool softcapped = false;   // step 7 ended with the soft-cap
    std::size_t fully_masked_rows = 0;
};

bool self_attention(const DoubleInputs& in) { return in.x_k.absent(); }

Tape run_forward(const DoubleWeights& w, const DoubleInputs& in, const Masks& masks,
                 const ForwardOptions& o, const Sizes& s) {
    const std::size_t B = s.batch, N = s.seq_len, M_in = s.kv_len, h = s.heads, G = s.kv_heads,
                      d_k = s.d_k();
    Tape t;
    t.m = M_in + (w.bias_k.absent() ? 0 : 1) + (o.add_zero_attn ? 1 : 0);
    const std::size_t M = t.m;
    t.x_q = in.x_q.values;
    t.x_k = self_attention(in) ? in.x_q.values : in.x_k.values;
    t.x_v = self_attention(in) ? in.x_q.values : in.x_v.values;
    // 1-3: projections; 3: the appended key/value positions
    t.q_proj = linear_forward(t.x_q, B * N, w.w_q, w.b_q);
    t.k_proj =
        append_rows(linear_forward(t.x_k, B * M_in, w.w_k, w.b_k), B, M_in, M, G * d_k, w.bias_k);
    t.v = append_rows(linear_forward(t.x_v, B * M_in, w.w_v, w.b_v), B, M_in, M, G * d_k, w.bias_v);
    // 5: QK-norm, then RoPE; the queries are the last N of the M positions
    t.q = w.q_norm.absent() ? t.q_proj : rms_norm_forward(t.q_proj, d_k, w.q_norm, t.q_inv_rms);
    t.k = w.k_norm.absent() ? t.k_proj : rms_norm_forward(t.k_proj, d_k, w.k_norm, t.k_inv_rms);
    if (o.rope) {
        rope_rotate(t.q, N, h, d_k, *o.rope, M - N, 1.0);
        rope_rotate(t.k, M, G, d_k, *o.rope, 0, 1.0);
    }
    // 6-10 per (b, i): 1/sqrt(d_k), or 1/sqrt(S) with a scale base S
    t.factor = o.scale ? 1.0 / std::sqrt(o.scale_base > 0 ? o.scale_base : double(d_k)) : 1.0;
    const MaskTerms mask{masks, s, M, masks.alibi ? alibi_slopes(h) : std::vector<double>{}};
    t.softcapped = masks.softcap > 0.0;
    t.tanh.assign(B * h * N * M, 0.0);
    t.p.assign(B * h * N * M, 0.0);
    t.context.assign(B * N * h * d_k, 0.0);
    Vec scores(M);
    for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t i = 0; i < h; ++i) {
            const std::size_t g = kv_head_of(i, h, G);
            for (std::size_t n = 0; n < N; ++n) {
                const std::size_t row = ((b * h + i) * N + n) * M;
                const std::size_t at = ((b * N + n) * h + i) * d_k;  // query n of head i
                const HeadRows keys{&t.k[(b * M * G + g) * d_k], G * d_k};
                const HeadRows values{&t.v[(b * M * G + g) * d_k], G * d_k};
                scores_forward(&t.q[at], keys, M, d_k, scores.data());  // 6
                for (std::size_t j = 0; j < M; ++j) {
                    scores[j] *= t.factor;  // 7
                    if (t.softcapped) t.tanh[row + j] = softcap_forward(scores[j], masks.softcap);
                    scores[j] += mask(b, i, n, j);  // 8
                }
                t.fully_masked_rows +=  // 9
                    softmax_row(scores.data(), &t.p[row], M, o.zero_masked_rows) ? 1 : 0;
                // ablation: the head's context stays zero, and so does its gradient
                if (o.ablate_head && *o.ablate_head == i) continue;
                context_forward(&t.p[row], values, M, d_k, &t.context[at]);  // 10
            }
        }
    }
    // 11-13 are the (B, N, h, d_k) order itself; 13, gated; 14
    t.concat = t.context;
    if (!w.w_g.absent()) {
        t.gate = gate_of(t.x_q, B * N, w.w_g, w.b_g);
        t.concat = gate_forward(t.context, t.gate, B * N, w.w_g.shape[0]);
    }
    t.output = linear_forward(t.concat, B * N, w.w_o, w.b_o);
    return t;
}

// ---- the pass backward, b14 to b1 ---------------------------------------------------------

DoubleTensor zeros_like(const DoubleTensor& t) {
    if (t.absent()) return {};
    return {t.shape, Vec(t.values.size(), 0.0)};
}

DoubleWeights zero_gradients(const DoubleWeights& w) {
    return {zeros_like(w.w_q),    zeros_like(w.w_k),    zeros_like(w.w_v),    zeros_like(w.w_o),
            zeros_like(w.b_q),    zeros_like(w.b_k),    zeros_like(w.b_v),    zeros_like(w.b_o),
            zeros_like(w.q_norm), zeros_like(w.k_norm), zeros_like(w.bias_k), zeros_like(w.bias_v),
            zeros_like(w.w_g),    zeros_like(w.b_g)};
}

// Σ_d dO_h ∘ O_h over the context of head i's query n in batch b
double context_dot(const Tape& t, const Vec& d_context, const Sizes& s, std::size_t b,
                   std::size_t i, std::size_t n) {
    const double* c = &t.context[((b * s.seq_len + n) * s.heads + i) * s.d_k()];
    const double* dc = &d_context[((b * s.seq_len + n) * s.heads + i) * s.d_k()];
    double sum = 0.0;
    for (std::size_t d = 0; d < s.d_k(); ++d) sum += dc[d] * c[d];
    return sum;
}

DoubleGradients run_backward(const Tape& t, const DoubleWeights& w, const DoubleInputs& in,
                             const ForwardOptions& o, const Sizes& s, const Vec& d_out,
                             SoftmaxRow& record) {
    const std::size_t B = s.batch, N = s.seq_len, M_in = s.kv_len, M = t.m, h = s.heads,
                      G = s.kv_heads, d_k = s.d_k();
    DoubleGradients g;
    g.params = zero_gradients(w);
    // b14, of: output = concat W_oᵀ + b_o
    Vec d_context(t.context.size(), 0.0), d_gate;
    linear_backward(t.concat, B * N, w.w_o, d_out, d_context, g.params.w_o, g.params.b_o);
    // b13, gated, of: concat = context ∘ σ(x_q W_gᵀ + b_g)
    if (!w.w_g.absent())
        gate_backward(t.context, t.gate, Vec(d_context), B * N, w.w_g.shape[0], d_context, d_gate);
    // b10-b6 per (b, i)
    Vec d_q(t.q.size(), 0.0), d_k_heads(t.k.size(), 0.0), d_v(t.v.size(), 0.0);
    Vec d_p(M), d_s(M);
    for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t i = 0; i < h; ++i) {
            if (o.ablate_head && *o.ablate_head == i) continue;  // its context was zeroed
            const std::size_t kv = kv_head_of(i, h, G);          // GQA: the group's dK, dV add up
            for (std::size_t n = 0; n < N; ++n) {
                const std::size_t row = ((b * h + i) * N + n) * M;
                const std::size_t at = ((b * N + n) * h + i) * d_k;  // query n of head i
                const std::size_t first_key = (b * M * G + kv) * d_k;
                const HeadRows keys{&t.k[first_key], G * d_k};
                const HeadRows values{&t.v[first_key], G * d_k};
                context_backward(&t.p[row], values, &d_context[at], M, d_k, d_p.data(),
                                 &d_v[first_key], G * d_k);                  // b10
                softmax_row_backward(&t.p[row], d_p.data(), d_s.data(), M);  // b9; b8 passes
                if (b == 0 && i == 0 && n + 1 == N) {
                    record = {Vec(&t.p[row], &t.p[row] + M), d_p,
                              context_dot(t, d_context, s, b, i, n)};
                }
                for (std::size_t j = 0; j < M; ++j) {  // b7: the soft-cap, then the scale
                    if (t.softcapped) d_s[j] = softcap_backward(d_s[j], t.tanh[row + j]);
                    d_s[j] *= t.factor;  // of: scores[j] *= factor
                }
                scores_backward(&t.q[at], keys, d_s.data(), M, d_k, &d_q[at], &d_k_heads[first_key],
                                G * d_k);  // b6
            }
        }
    }
    // b5: RoPE rotated back, then QK-norm's adjoint
    if (o.rope) {
        rope_rotate(d_q, N, h, d_k, *o.rope, M - N, -1.0);
        rope_rotate(d_k_heads, M, G, d_k, *o.rope, 0, -1.0);
    }
    if (!w.q_norm.absent()) {
        d_q = rms_norm_backward(t.q_proj, d_k, w.q_norm, t.q_inv_rms, d_q, g.params.q_norm);
        d_k_heads =
            rms_norm_backward(t.k_proj, d_k, w.k_norm, t.k_inv_rms, d_k_heads, g.params.k_norm);
    }
    // b3: the appended positions' rows go to bias_k, bias_v
    const Vec d_k_proj = drop_appended(d_k_heads, B, M_in, M, G * d_k, g.params.bias_k);
    const Vec d_v_proj = drop_appended(d_v, B, M_in, M, G * d_k, g.params.bias_v);
    // b1-b3: the projections; self-attention adds the three paths into one dx
    Vec dx_q(t.x_q.size(), 0.0), dx_k(t.x_k.size(), 0.0), dx_v(t.x_v.size(), 0.0);
    linear_backward(t.x_q, B * N, w.w_q, d_q, dx_q, g.params.w_q, g.params.b_q);
    if (!w.w_g.absent())  // b13's gate, of: gate = σ(x_q W_gᵀ + b_g)
        linear_backward(t.x_q, B * N, w.w_g, d_gate, dx_q, g.params.w_g, g.params.b_g);
    if (self_attention(in)) {
        linear_backward(t.x_k, B * M_in, w.w_k, d_k_proj, dx_q, g.params.w_k, g.params.b_k);
        linear_backward(t.x_v, B * M_in, w.w_v, d_v_proj, dx_q, g.params.w_v, g.params.b_v);
    } else {
        linear_backward(t.x_k, B * M_in, w.w_k, d_k_proj, dx_k, g.params.w_k, g.params.b_k);
        linear_backward(t.x_v, B * M_in, w.w_v, d_v_proj, dx_v, g.params.w_v, g.params.b_v);
        g.key = {in.x_k.shape, dx_k};
        g.value = {in.x_v.shape, dx_v};
    }
    g.input = {in.x_q.shape, dx_q};
    return g;
}

}  // namespace

DoubleTensor to_double(const Tensor& t) {
    if (t.empty()) return {};
    const std::vector<float> values = t.to_vector();
    return {t.shape(), Vec(values.begin(), values.end())};
}

DoubleWeights to_double(const Weights& w) {
    return {to_double(w.w_q),    to_double(w.w_k),    to_double(w.w_v),    to_double(w.w_o),
            to_double(w.b_q),    to_double(w.b_k),    to_double(w.b_v),    to_double(w.b_o),
            to_double(w.q_norm), to_double(w.k_norm), to_double(w.bias_k), to_double(w.bias_v),
            to_double(w.w_g),    to_double(w.b_g)};
}

DoubleInputs to_double(const Inputs& in) {
    if (in.self_attention()) return {to_double(in.x_q), {}, {}};
    return {to_double(in.x_q), to_double(in.x_k), to_double(in.x_v)};
}

DoubleTensor reference_output(const DoubleWeights& weights, const DoubleInputs& inputs,
                              const Masks& masks, const ForwardOptions& options,
                              const Sizes& sizes) {
    Tape tape = run_forward(weights, inputs, masks, options, sizes);
    return {{sizes.batch, sizes.seq_len, sizes.d_model}, std::move(tape.output)};
}

std::uint64_t reference_bytes(const Sizes& s) {
    const std::string what = "--gradcheck's double-precision reference";
    const std::uint64_t B = s.batch, N = s.seq_len, M = s.kv_len, inner = s.inner(),
                        kv = std::uint64_t(s.kv_heads) * s.d_k();
    const std::uint64_t weights =
        checked_sum({checked_product({inner, s.d_model + s.d_model + 1}, what),
                     checked_product({kv, s.kdim + s.vdim + 2}, what), s.d_model}, what);
    const std::uint64_t doubles = checked_sum(
        {checked_product({3, B, s.heads, N, M}, what), checked_product({4, weights}, what),
         checked_product({4, B, N * s.d_model + M * (s.kdim + s.vdim)}, what),
         checked_product({2, B, 6 * N * inner + 5 * M * kv}, what)},
        what);
    return checked_product({doubles, sizeof(double)}, what);
}

ReferenceGradResult reference_forward_backward(const DoubleWeights& weights,
                                               const DoubleInputs& inputs, const Masks& masks,
                                               const ForwardOptions& options, const Sizes& sizes,
                                               const DoubleTensor& grad_output) {
    const Tape tape = run_forward(weights, inputs, masks, options, sizes);
    ReferenceGradResult result;
    result.output = {{sizes.batch, sizes.seq_len, sizes.d_model}, tape.output};
    result.weights = {{sizes.batch, sizes.heads, sizes.seq_len, tape.m}, tape.p};
    result.fully_masked_rows = tape.fully_masked_rows;
    result.grads =
        run_backward(tape, weights, inputs, options, sizes, grad_output.values, result.row);
    return result;
}

ForwardResult reference_forward(const Weights& weights, const Inputs& inputs, const Masks& masks,
                                const ForwardOptions& options) {
    const Sizes s = check_pass(weights, inputs, masks, options);
    const Tape tape = run_forward(to_double(weights), to_double(inputs), masks, options, s);
    ForwardResult result;
    result.output =
        Tensor({s.batch, s.seq_len, s.d_model}, {tape.output.begin(), tape.output.end()});
    result.weights = Tensor({s.batch, s.heads, s.seq_len, tape.m}, {tape.p.begin(), tape.p.end()});
    result.fully_masked_rows = tape.fully_masked_rows;
    return result;
}

}  // namespace mha
