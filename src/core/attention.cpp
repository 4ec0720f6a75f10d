// The forward pass of multi-head attention as 14 numbered steps.
//
// Shape legend: B batch, N queries, M keys/values, d_model = h · d_k unless the heads are
// wider (--head-dim: Q and the concat are then h·d_k wide, W_o is (d_model, h·d_k)),
// G key/value heads (h unless shared, see core/kv_heads.h): K and V are (B, G, M, d_k).
//   x_q (B, N, d_model)  x_k (B, M, kdim)  x_v (B, M, vdim)
//   1-3  Q, K, V   = x W.T + b             (B, N, h·d_k), (B, M, G·d_k)
//   4    view                              (B, N|M, h, d_k)
//   5    transpose(1, 2)                   (B, h, N|M, d_k)   no copy
//   6    scores = Q @ K.T                  (B, h, N, M)
//   7    scores / sqrt(d_k)
//   8    mask
//   9    softmax over M -> weights         (B, h, N, M)
//   10   context = weights @ V             (B, h, N, d_v)     d_v = d_k except in MLA
//   11   transpose(1, 2)                   (B, N, h, d_v)     no copy
//   12   contiguous()                      (B, N, h, d_v)     the one copy
//   13   view                              (B, N, h·d_v)      the concat
//   14   output = concat W_o.T + b_o       (B, N, d_model)
//
// Steps 6-10 run on (batch, head) units (run_units), which every form shares. Two
// paths run them: standard stores the scores and weights (and fuses 7-9 when nobody
// watches); streaming (core/streaming.h) never stores them and writes the context
// straight into (B, N, h, d_k) order, so step 12 has nothing left to copy. Each
// trace.show(...) hands the step the plan (core/plan.h) describes to the tracer.

#include "core/attention.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/checked.h"
#include "core/error.h"
#include "core/flash_row.h"
#include "core/kv_heads.h"
#include "core/ops.h"
#include "core/parallel.h"
#include "core/position_bias.h"
#include "core/rms_norm.h"
#include "core/softcap.h"
#include "core/streaming.h"

namespace mha {

void project_into(const float* x, std::size_t rows, std::size_t in,
                  const std::vector<LinearTarget>& targets, std::size_t threads) {
    std::uint64_t out = 0;
    for (const LinearTarget& t : targets) out += t.out;
    threads = threads_for(std::uint64_t(rows) * in * out, threads);
    const std::size_t panels = linear_panel_count(targets);
    const std::size_t columns = std::max<std::size_t>(1, std::min(threads, panels));
    const std::size_t row_parts = std::max<std::size_t>(1, std::min(threads / columns, rows));
    const std::size_t parts = columns * row_parts;
    parallel_for(parts, parts, [&](std::size_t begin, std::size_t end) {
        for (std::size_t part = begin; part < end; ++part) {
            const std::size_t r = part / columns, c = part % columns;
            linear_panels(x, in, targets, rows * r / row_parts, rows * (r + 1) / row_parts,
                          panels * c / columns, panels * (c + 1) / columns);
        }
    });
}

namespace {

// y's place in a fused product: y = x Wᵀ + b, W's panels from `packed` when given.
LinearTarget target_of(const Tensor& w, const Tensor& bias, Tensor& y,
                       const PackedLinear* packed) {
    return {w.data(), bias.empty() ? nullptr : bias.data(), y.data(), w.size(0),
            packed == nullptr ? nullptr : packed->for_kernels()};
}

}  // namespace

PackedWeights pack_weights(const Weights& w) {
    const auto pack = [](const Tensor& t) { return pack_linear(t.data(), t.size(0), t.size(1)); };
    return {pack(w.w_q), pack(w.w_k), pack(w.w_v), pack(w.w_o)};
}

std::uint64_t packed_weights_bytes(const Sizes& s) {
    const std::string what = "the memory for this configuration";
    const std::size_t q = s.inner(), kv = s.kv_heads * s.d_k();
    return checked_product(
        {sizeof(float),
         checked_sum({packed_linear_floats(q, s.d_model), packed_linear_floats(kv, s.kdim),
                      packed_linear_floats(kv, s.vdim), packed_linear_floats(s.d_model, q)},
                     what)},
        what);
}

// 1-3 and 14: x (B, L, in) -> x Wᵀ + b (B, L, out).
Tensor project(const Tensor& x, const Tensor& w, const Tensor& bias, std::size_t threads,
               Workspace* workspace, const PackedLinear* packed) {
    Tensor y = new_uninitialised(workspace, {x.size(0), x.size(1), w.size(0)});
    project_into(x.data(), x.size(0) * x.size(1), w.size(1), {target_of(w, bias, y, packed)},
                 threads);
    return y;
}

namespace {

// ---- 0-5: inputs, projections, heads ----------------------------------------------------

using Qkv = HeadTensors;  // three tensors that travel together through steps 1-5

// 0: the inputs, named x when one tensor plays query, key and value.
void show_inputs(const Inputs& in, PassTrace& trace) {
    trace.show_input(in.x_q);
    if (in.self_attention()) return;
    trace.show_input(in.x_k);
    trace.show_input(in.x_v);
}

// The very same tensor (storage, offset, shape, strides) plays query, key and value.
bool one_input(const Inputs& in) {
    const auto same = [&](const Tensor& t) {
        return t.shares_storage_with(in.x_q) && t.offset() == in.x_q.offset() &&
               t.shape() == in.x_q.shape() && t.strides() == in.x_q.strides();
    };
    return same(in.x_k) && same(in.x_v);
}

// 1-3: (B, N, d_model) @ (h·d_k, d_model)ᵀ -> (B, N, h·d_k); K and V with M rows, G·d_k
// wide. Self-attention computes the three as one fused product of x, still three tensors.
Qkv project_qkv(const Weights& w, const Inputs& in, const ForwardOptions& o, PassTrace& trace) {
    const PackedWeights* packed = o.packed;
    Qkv x;
    if (one_input(in)) {
        const Tensor x_in = in.x_q.contiguous();
        const std::size_t B = x_in.size(0), L = x_in.size(1);
        x = {new_uninitialised(o.workspace, {B, L, w.w_q.size(0)}),
             new_uninitialised(o.workspace, {B, L, w.w_k.size(0)}),
             new_uninitialised(o.workspace, {B, L, w.w_v.size(0)})};
        project_into(x_in.data(), B * L, w.d_model(),
                     {target_of(w.w_q, w.b_q, x.q, packed ? &packed->q : nullptr),
                      target_of(w.w_k, w.b_k, x.k, packed ? &packed->k : nullptr),
                      target_of(w.w_v, w.b_v, x.v, packed ? &packed->v : nullptr)},
                     o.threads);
    } else {
        x = {project(in.x_q.contiguous(), w.w_q, w.b_q, o.threads, o.workspace,
                     packed ? &packed->q : nullptr),
             project(in.x_k.contiguous(), w.w_k, w.b_k, o.threads, o.workspace,
                     packed ? &packed->k : nullptr),
             project(in.x_v.contiguous(), w.w_v, w.b_v, o.threads, o.workspace,
                     packed ? &packed->v : nullptr)};
    }
    trace.show(x.q);
    trace.show(x.k);
    trace.show(x.v);
    return x;
}

// x (B, M, W) with rows (W) appended to every batch -> (B, M + rows.size(), W), a copy; a
// null row stays zero (add_zero_attn).
Tensor append_rows(const Tensor& x, const std::vector<const float*>& rows) {
    const std::size_t B = x.size(0), M = x.size(1), W = x.size(2), grown = M + rows.size();
    Tensor out({B, grown, W});
    const Tensor source = x.contiguous();
    for (std::size_t b = 0; b < B; ++b) {
        float* dst = out.data() + b * grown * W;
        std::copy(source.data() + b * M * W, source.data() + (b + 1) * M * W, dst);
        for (std::size_t r = 0; r < rows.size(); ++r) {
            if (rows[r] != nullptr) std::copy(rows[r], rows[r] + W, dst + (M + r) * W);
        }
    }
    return out;
}

// 3, once more: K, V (B, M, ·) -> (B, M + extra, ·): add_bias_kv's bias_k and bias_v, then
// add_zero_attn's zeros, one more key/value position each.
Qkv append_kv(Qkv x, const Weights& w, bool zero_attn, PassTrace& trace) {
    std::vector<const float*> k_rows, v_rows;
    if (!w.bias_k.empty()) {
        k_rows.push_back(w.bias_k.data());
        v_rows.push_back(w.bias_v.data());
    }
    if (zero_attn) {
        k_rows.push_back(nullptr);
        v_rows.push_back(nullptr);
    }
    x.k = append_rows(x.k, k_rows);
    x.v = append_rows(x.v, v_rows);
    trace.show(x.k);
    trace.show(x.v);
    return x;
}

// x (..., M) -> (..., M + extra): every row gets `extra` zeros at its end.
Tensor pad_last_dim(const Tensor& x, std::size_t extra) {
    if (x.empty()) return x;
    Shape shape = x.shape();
    const std::size_t M = shape.back();
    const std::size_t rows = element_count(Shape(shape.begin(), shape.end() - 1));
    shape.back() += extra;
    Tensor out(shape);
    const Tensor source = x.contiguous();
    for (std::size_t r = 0; r < rows; ++r) {
        std::copy(source.data() + r * M, source.data() + (r + 1) * M, out.data() + r * (M + extra));
    }
    return out;
}

// 4: (B, L, d_model) -> (B, L, h, d_k), no copy; 5: -> (B, h, L, d_k), strides swapped,
// no copy. K and V split into G heads instead of h.
Qkv split_heads(const Qkv& x, const Sizes& s, PassTrace& trace) {
    const std::size_t B = s.batch, N = s.seq_len, M = s.kv_len, d_k = s.d_k();
    const Qkv viewed{x.q.view({B, N, s.heads, d_k}), x.k.view({B, M, s.kv_heads, d_k}),
                     x.v.view({B, M, s.kv_heads, d_k})};
    trace.show(viewed.q);
    trace.show(viewed.k);
    trace.show(viewed.v);
    const Qkv heads{viewed.q.transpose(1, 2), viewed.k.transpose(1, 2), viewed.v.transpose(1, 2)};
    trace.show(heads.q);
    trace.show(heads.k);
    trace.show(heads.v);
    return heads;
}

// ---- 6-10: the unit of work, one (batch, head) pair, and the packed pass's units -------

// 6: (N, d_k) x (d_k, M) -> (N, M)
void unit_scores(const AttentionUnit& u) { gemm(u.q, u.k.transposed(), u.scores, u.k.rows); }

// 7: keep the scores' variance near 1 whatever d_k is; then the soft-cap, if any
void unit_scale(const AttentionUnit& u, float factor) {
    if (factor != 1.0f) scale(u.scores, u.mask.n * u.mask.m, factor);
    const double cap = u.mask.masks->softcap;
    if (cap > 0.0) softcap(u.scores, u.mask.n * u.mask.m, cap);
}

// 8: blocked keys get -inf, float masks and ALiBi's bias are added
void unit_mask_scores(const AttentionUnit& u) {
    const HeadMask& mask = u.mask;
    const Masks& rules = *mask.masks;
    const ScoreBlock grid{u.scores, mask.n, mask.m, mask.m, mask.m - mask.n, 0};
    if (mask.attn != nullptr) add_mask(u.scores, mask.attn, mask.n * mask.m);
    if (mask.padding != nullptr) add_key_padding(u.scores, mask.padding, mask.n, mask.m);
    if (mask.alibi_slope != 0.0) add_alibi(grid, mask.alibi_slope);
    if (rules.causal) apply_causal(u.scores, mask.n, mask.m, rules.causal_align);
    if (rules.window > 0) apply_window(grid, {rules.window, rules.sinks});
}

// 9: each query's scores become weights over the M keys, summing to 1 (step 8 is done: the
// unit's view of no mask at all)
std::size_t unit_softmax(const AttentionUnit& u, const UnitMath& math) {
    static const Masks unmasked;
    const HeadMask none{&unmasked, nullptr, nullptr, u.mask.n, u.mask.m};
    return scale_mask_softmax(u.scores, 1.0f, none, math.zero_masked_rows);
}

// 10: (N, M) x (M, d_k) -> (N, d_k)
void unit_context(const AttentionUnit& u) {
    const MatrixView weights{u.scores, u.mask.n, u.mask.m, u.mask.m, 1};
    gemm(weights, u.v, u.context, u.ldc);
}

// ---- scores beyond float32 ---------------------------------------------------------------

constexpr double float_max = std::numeric_limits<float>::max();

// The largest |value| of a row of n floats, `stride` apart: +inf or NaN when one of them
// is. Read as integers, |v|'s bits (the sign cleared) order as |v| does, infinity and NaN
// above every finite value; eight lanes of integer maxima, which compilers vectorise.
float row_magnitude(const float* row, std::size_t n, std::size_t stride) {
    constexpr std::size_t lanes = 8;
    const auto magnitude_bits = [](const float* v) {
        std::int32_t bits;
        std::memcpy(&bits, v, sizeof bits);
        return bits & 0x7fffffff;
    };
    std::int32_t top[lanes] = {};
    std::size_t c = 0;
    if (stride == 1) {
        for (; c + lanes <= n; c += lanes) {
            for (std::size_t l = 0; l < lanes; ++l) {
                const std::int32_t bits = magnitude_bits(row + c + l);
                top[l] = top[l] < bits ? bits : top[l];
            }
        }
    }
    for (; c < n; ++c) top[0] = std::max(top[0], magnitude_bits(row + c * stride));
    const std::int32_t largest = *std::max_element(top, top + lanes);
    float magnitude;
    std::memcpy(&magnitude, &largest, sizeof magnitude);
    return magnitude;
}

// The largest |value| of m (rows, d_k). A value that is not finite is a projection that
// overflowed float32: an Error naming its row.
double largest_magnitude(const MatrixView& m, const char* name, const AttentionUnit& u,
                         std::size_t first_row) {
    float largest = 0.0f;
    for (std::size_t r = 0; r < m.rows; ++r) {
        const float magnitude = row_magnitude(m.data + r * m.row_stride, m.cols, m.col_stride);
        if (!(magnitude <= std::numeric_limits<float>::max())) {
            throw Error(std::string(name) + " overflows float32 at batch " +
                        std::to_string(u.batch) + ", head " + std::to_string(u.head) +
                        ", position " + std::to_string(first_row + r) +
                        ": the inputs or weights are too large for float32");
        }
        largest = std::max(largest, magnitude);
    }
    return largest;
}

std::string overflow_message(const AttentionUnit& u, std::size_t n, std::size_t m, double score,
                             double terms, float factor) {
    char figures[200];
    std::snprintf(figures, sizeof figures,
                  "q·k times the scale %.3g is %.3g (its terms add up to %.3g), beyond "
                  "float32's largest value %.3g",
                  double(factor), score, terms, float_max);
    return "the score of batch " + std::to_string(u.batch) + ", head " + std::to_string(u.head) +
           ", query " + std::to_string(u.first_query + n) + ", key " + std::to_string(m) +
           " overflows float32: " + figures + "; the inputs or weights are too large for float32";
}

// Whether unit u must form its scores as (q·factor) kᵀ: true where some q·k would pass
// FLT_MAX in float32 (every partial sum of q·k is at most Σ_j |q_j k_j| ≤ d_k max|q| max|k|,
// a bound that clears almost every unit at once) while q·k·factor does not. Throws when a
// scaled score, or the sum of its scaled terms, passes FLT_MAX.
bool needs_prescale(const AttentionUnit& u, float factor) {
    const double bound = double(u.q.cols) * largest_magnitude(u.q, "Q", u, u.first_query) *
                         largest_magnitude(u.k, "K", u, 0) * std::max(1.0, double(factor));
    if (bound < float_max / 2) return false;
    bool prescale = false;
    for (std::size_t n = 0; n < u.q.rows; ++n) {
        for (std::size_t m = 0; m < u.k.rows; ++m) {
            double dot = 0.0, terms = 0.0;
            for (std::size_t j = 0; j < u.q.cols; ++j) {
                const double product = double(u.q(n, j)) * double(u.k(m, j));
                dot += product;
                terms += std::abs(product);
            }
            if (terms * factor >= float_max * 0.999) {
                throw Error(overflow_message(u, n, m, dot * factor, terms * factor, factor));
            }
            prescale = prescale || terms >= float_max / 2;
        }
    }
    return prescale;
}

// u with q·factor in `scaled` (N, d_k) in place of q.
AttentionUnit with_scaled_q(AttentionUnit u, float factor, std::vector<float>& scaled) {
    const std::size_t rows = u.q.rows, cols = u.q.cols;
    scaled.resize(rows * cols);
    for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t c = 0; c < cols; ++c) scaled[r * cols + c] = u.q(r, c) * factor;
    }
    u.q = {scaled.data(), rows, cols, cols, 1};
    return u;
}

// The steps that read q or the factor: 6, 7 and the steps that include them.
bool forms_scores(UnitStep step) {
    return step != UnitStep::Mask && step != UnitStep::Softmax && step != UnitStep::Context;
}

// Everything one unit does for `step`; returns its rows with every key blocked.
std::size_t run_unit(UnitStep step, const AttentionUnit& u, const UnitMath& math);

// run_unit, with the unit's q scaled first where q·k would overflow float32.
std::size_t run_unit_in_range(UnitStep step, const AttentionUnit& u, const UnitMath& math) {
    if (!forms_scores(step) || !needs_prescale(u, math.factor)) return run_unit(step, u, math);
    std::vector<float> scaled;
    return run_unit(step, with_scaled_q(u, math.factor, scaled), {1.0f, math.zero_masked_rows});
}

std::size_t run_unit(UnitStep step, const AttentionUnit& u, const UnitMath& math) {
    switch (step) {
        case UnitStep::Scores: unit_scores(u); return 0;
        case UnitStep::Scale: unit_scale(u, math.factor); return 0;
        case UnitStep::Mask: unit_mask_scores(u); return 0;
        case UnitStep::Softmax: return unit_softmax(u, math);
        case UnitStep::ScaleMaskSoftmax:
            return scale_mask_softmax(u.scores, math.factor, u.mask, math.zero_masked_rows);
        case UnitStep::Context: unit_context(u); return 0;
        case UnitStep::Attend: {
            unit_scores(u);
            const std::size_t blocked = run_unit(UnitStep::ScaleMaskSoftmax, u, math);
            unit_context(u);
            return blocked;
        }
        case UnitStep::Streamed:
            return attend_streaming(u.q, u.k, u.v, u.mask, math.factor, math.zero_masked_rows,
                                    u.context, u.ldc);
    }
    return 0;
}

}  // namespace

std::size_t run_units(UnitStep step, const Units& units, const UnitMath& math,
                      std::size_t threads) {
    std::vector<std::size_t> blocked(units.count, 0);
    if (units.count > 0) {  // both products of every unit: no worker for a tiny problem
        const AttentionUnit first = units.unit(0);
        threads = threads_for(std::uint64_t(units.count) * first.mask.n * first.mask.m * 2 *
                                  first.q.cols,
                              threads);
    }
    parallel_for(units.count, threads, [&](std::size_t begin, std::size_t end) {
        for (std::size_t u = begin; u < end; ++u) blocked[u] = run_unit_in_range(step, units.unit(u), math);
    });
    std::size_t total = 0;
    for (std::size_t rows : blocked) total += rows;
    return total;
}

void position_heads(const Weights& w, Tensor& q, Tensor& k, std::size_t first_query,
                    std::size_t first_key, const ForwardOptions& options, PassTrace& trace) {
    if (!w.q_norm.empty()) {  // RMSNorm of each head's (d_k) rows
        rms_norm_rows(q, w.q_norm);
        trace.show(q);
        rms_norm_rows(k, w.k_norm);
        trace.show(k);
    }
    if (options.rope) {
        apply_rope(q, *options.rope, first_query);
        trace.show(q);
        apply_rope(k, *options.rope, first_key);
        trace.show(k);
    }
}

UnitMath unit_math(const Sizes& s, const ForwardOptions& options) {
    return {score_factor(scale_base_of(s, options.scale_base), options.scale),
            options.zero_masked_rows};
}

namespace {

// Unit u = (b, i) of the packed heads: Q[b, i], the K/V head it reads, and its slices of
// the scores (B, h, N, M; may be empty) and of the context (B, h, N, d_v; any strides).
Units packed_units(const Qkv& heads, const Masks& masks, const Sizes& s, Tensor& scores,
                   Tensor& context) {
    // no query or no key: nothing to score, and the context stays zero, as
    // weights (N, 0) @ V (0, d_k) is
    const bool empty = s.seq_len == 0 || s.kv_len == 0;
    return {empty ? 0 : s.batch * s.heads, [&, s](std::size_t u) {
                const std::size_t b = u / s.heads, i = u % s.heads;
                const std::size_t g = kv_head_of(i, s.heads, s.kv_heads);
                const Strides& st = context.strides();
                return AttentionUnit{head_matrix(heads.q, b, i), head_matrix(heads.k, b, g),
                                     head_matrix(heads.v, b, g), unit_mask(masks, b, i, s),
                                     scores.empty() ? nullptr
                                                    : scores.data() + u * s.seq_len * s.kv_len,
                                     context.data() + b * st[0] + i * st[1], st[2], b, i};
            }};
}

// The context's storage, (B, h, N, d_v) or (B, N, h, d_v): each unit writes every element
// of its slice (a fully masked row as NaN or zeros), so it needs no zero fill, unless there
// is no key: then no unit runs and the context is the zero of an empty weighted sum.
Tensor new_context(const Sizes& s, Shape shape, Workspace* workspace) {
    return s.kv_len == 0 ? new_tensor(workspace, std::move(shape))
                         : new_uninitialised(workspace, std::move(shape));
}

// 6-10 on the standard path: the (B, h, N, M) scores become the weights in place.
Tensor attend_standard(const Qkv& heads, const Masks& masks, const Sizes& s,
                       const ForwardOptions& o, PassTrace& trace, ForwardResult& result) {
    // 6 writes every score (none when N or M is 0); 8-9 rewrite them in place
    Tensor scores = new_uninitialised(o.workspace, {s.batch, s.heads, s.seq_len, s.kv_len});
    Tensor context = new_context(s, {s.batch, s.heads, s.seq_len, s.d_v()}, o.workspace);
    const Units units = packed_units(heads, masks, s, scores, context);
    const UnitMath math = unit_math(s, o);
    auto run = [&](UnitStep step) { return run_units(step, units, math, o.threads); };
    if (!trace.on()) {  // nobody watches: each unit runs 6-10 at once, 7-9 fused row by row
        result.fully_masked_rows = run(UnitStep::Attend);
    } else {
        run(UnitStep::Scores);                            // 6: Q @ K.T  (B, h, N, M)
        trace.show(scores);
        run(UnitStep::Scale);                             // 7: / sqrt(d_k)
        trace.show(scores);
        run(UnitStep::Mask);                              // 8: + mask, blocked -> -inf
        trace.show_masked(scores);
        result.fully_masked_rows = run(UnitStep::Softmax);  // 9: softmax over M
        trace.show(scores);
        run(UnitStep::Context);                           // 10: weights @ V  (B, h, N, d_v)
        trace.show(context);
    }
    result.weights = scores;
    return context;
}

// 6-10 on the streaming path: one traced step, no (B, h, N, M) tensor. The context is
// stored in (B, N, h, d_v) order and returned as its (B, h, N, d_v) transpose.
Tensor attend_streamed(const Qkv& heads, const Masks& masks, const Sizes& s,
                       const ForwardOptions& o, PassTrace& trace, ForwardResult& result) {
    Tensor none;
    Tensor context =
        new_context(s, {s.batch, s.seq_len, s.heads, s.d_v()}, o.workspace).transpose(1, 2);
    const Units units = packed_units(heads, masks, s, none, context);
    result.fully_masked_rows = run_units(UnitStep::Streamed, units, unit_math(s, o), o.threads);
    if (o.flash_row && trace.on() && units.count > 0) {  // batch 0, head 0, one row retraced
        const AttentionUnit u = units.unit(0);
        trace.upcoming().flash =
            flash_facts(u.q, u.k, u.v, u.mask, unit_math(s, o).factor, *o.flash_row, 0);
    }
    trace.show(context);
    return context;
}

}  // namespace

// Ablation, between 10 and 11: context[:, head] = 0 through the strides, so it is right
// for the standard context (B, h, N, d_v) and the streaming one, a view of (B, N, h, d_v).
void zero_head(Tensor& context, std::size_t head) {
    const Strides& st = context.strides();
    float* base = context.data() + head * st[1];
    for (std::size_t b = 0; b < context.size(0); ++b) {
        for (std::size_t n = 0; n < context.size(2); ++n) {
            float* row = base + b * st[0] + n * st[2];
            for (std::size_t d = 0; d < context.size(3); ++d) row[d * st[3]] = 0.0f;
        }
    }
}

namespace {

// ---- 11-13: the heads side by side again ------------------------------------------------

// 11: (B, h, N, d_v) -> (B, N, h, d_v), no copy; 12: the one copy; 13: -> (B, N, h·d_v).
Tensor combine_heads(const Tensor& context, const Sizes& s, PassTrace& trace) {
    const Tensor back = context.transpose(1, 2);
    trace.show(back);
    const Tensor packed = back.contiguous();
    trace.show(packed);
    const Tensor concat = packed.view({s.batch, s.seq_len, s.value_inner()});
    trace.show(concat);
    return concat;
}

}  // namespace

// ---- The pass -----------------------------------------------------------------------------

AppendedKv appended_kv(const Weights& w, const ForwardOptions& options) {
    return {!w.bias_k.empty(), options.add_zero_attn};
}

Masks with_appended_keys(const Masks& masks, std::size_t extra) {
    Masks padded = masks;
    padded.attn_mask = pad_last_dim(masks.attn_mask, extra);
    padded.key_padding = pad_last_dim(masks.key_padding, extra);
    return padded;
}

PassSpec forward_spec(const Weights& w, const Inputs& in, const Masks& masks,
                      const ForwardOptions& options) {
    Sizes s = check_pass(w, in, masks, options);
    s.kv_len += appended_kv(w, options).count();  // from step 3 on, K and V have them too
    return pass_spec(s, w, in, masks, options, Form::Packed);
}

ForwardResult forward(const Weights& w, const Inputs& in, const Masks& masks,
                      const ForwardOptions& options, Tracer& tracer) {
    PassTrace trace(tracer, forward_spec(w, in, masks, options));
    return forward(w, in, masks, options, trace);
}

ForwardResult forward(const Weights& w, const Inputs& in, const Masks& masks,
                      const ForwardOptions& options, PassTrace& trace) {
    Sizes s = check_pass(w, in, masks, options);
    const std::size_t extra = appended_kv(w, options).count();
    s.kv_len += extra;  // from step 3 on, K and V have the appended positions too
    show_inputs(in, trace);                                              // 0
    Qkv projected = project_qkv(w, in, options, trace);                 // 1-3
    if (extra == 0) {
        return forward_from_heads(w, split_heads(projected, s, trace), masks, s, options,
                                  trace);                                // 4-5, then 6-14
    }
    projected = append_kv(std::move(projected), w, options.add_zero_attn, trace);  // 3: M + extra
    return forward_from_heads(w, split_heads(projected, s, trace),
                              with_appended_keys(masks, extra), s, options, trace);
}

ForwardResult forward_from_heads(const Weights& w, HeadTensors heads, const Masks& masks,
                                 const Sizes& s, const ForwardOptions& options,
                                 PassTrace& trace) {
    position_heads(w, heads.q, heads.k, s.kv_len - s.seq_len, 0, options, trace);  // 5
    ForwardResult result;
    Tensor context = options.path == AttentionPath::Streaming
                         ? attend_streamed(heads, masks, s, options, trace, result)
                         : attend_standard(heads, masks, s, options, trace, result);  // 6-10
    heads = HeadTensors{};  // Q, K and V are freed before steps 11-14
    if (options.ablate_head) zero_head(context, *options.ablate_head);
    const Tensor concat = combine_heads(context, s, trace);                            // 11-13

    // 14: mix the heads. (B, N, h·d_v) @ (d_model, h·d_v)ᵀ -> (B, N, d_model)
    result.output = project(concat, w.w_o, w.b_o, options.threads, options.workspace,
                            options.packed ? &options.packed->o : nullptr);
    trace.show(result.output);
    return result;
}

}  // namespace mha
