// The forward pass of multi-head attention as 14 numbered steps.
//
// Shape legend: B batch, N queries, M keys/values, d_model = h · d_k,
// G key/value heads (h unless shared, see core/kv_heads.h): K and V are (B, G, M, d_k).
//   x_q (B, N, d_model)  x_k (B, M, kdim)  x_v (B, M, vdim)
//   1-3  Q, K, V   = x W.T + b             (B, N|M, d_model)
//   4    view                              (B, N|M, h, d_k)
//   5    transpose(1, 2)                   (B, h, N|M, d_k)   no copy
//   6    scores = Q @ K.T                  (B, h, N, M)
//   7    scores / sqrt(d_k)
//   8    mask
//   9    softmax over M -> weights         (B, h, N, M)
//   10   context = weights @ V             (B, h, N, d_k)
//   11   transpose(1, 2)                   (B, N, h, d_k)     no copy
//   12   contiguous()                      (B, N, h, d_k)     the one copy
//   13   view                              (B, N, d_model)    the concat
//   14   output = concat W_o.T + b_o       (B, N, d_model)
//
// Two paths run steps 6-10. Standard stores the scores and weights and traces
// each step (fused 7-9 when nobody is watching). Streaming (core/streaming.h)
// never stores them: it writes the context straight into (B, N, h, d_k) order,
// so step 12 has nothing left to copy.

#include "core/attention.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <utility>

#include "core/checked.h"
#include "core/error.h"
#include "core/kv_heads.h"
#include "core/kernels.h"
#include "core/ops.h"
#include "core/parallel.h"
#include "core/streaming.h"

namespace mha {

namespace {

using Dims = std::vector<std::string>;

constexpr std::size_t max_grid = 16;  // draw the mask grid only up to 16 x 16

std::string shape_error(const std::string& what, const std::string& expected, const Tensor& t) {
    return what + ": expected shape " + expected + ", got " + to_string(t.shape());
}

// Runs body(b, h) for every (batch, head) unit, units split over threads.
template <typename Body>
void for_each_unit(std::size_t batch, std::size_t heads, std::size_t threads, Body body) {
    parallel_for(batch * heads, threads, [&](std::size_t begin, std::size_t end) {
        for (std::size_t u = begin; u < end; ++u) body(u / heads, u % heads);
    });
}

// The (N, M) additive mask for unit (b, h) within attn_mask (N, M), (B, N, M) or (B·h, N, M).
const float* unit_mask(const Tensor& attn_mask, std::size_t b, std::size_t h, const Sizes& s) {
    if (attn_mask.dim() == 2) return attn_mask.data();
    const std::size_t plane = s.seq_len * s.kv_len;
    const bool per_head = attn_mask.size(0) == s.batch * s.heads;
    return attn_mask.data() + (per_head ? b * s.heads + h : b) * plane;
}

// Everything step 8 adds to unit (b, h).
HeadMask head_mask(const Masks& masks, std::size_t b, std::size_t h, const Sizes& s) {
    HeadMask mask;
    if (!masks.attn_mask.empty()) mask.attn = unit_mask(masks.attn_mask, b, h, s);
    if (!masks.key_padding.empty()) mask.padding = masks.key_padding.data() + b * s.kv_len;
    mask.causal = masks.causal;
    mask.n = s.seq_len;
    mask.m = s.kv_len;
    return mask;
}

}  // namespace

std::vector<std::string> mask_notes(const Masks& masks, const Sizes& s) {
    std::vector<std::string> notes = masks.notes;
    if (masks.causal) {
        notes.push_back(s.seq_len == s.kv_len
                            ? "causal: query i attends to keys 0..i"
                            : "causal, bottom-right aligned: query i attends to keys 0..i+" +
                                  std::to_string(s.kv_len) + "-" + std::to_string(s.seq_len) +
                                  " (the queries are the last N of the M positions)");
    }
    if (notes.empty()) notes.push_back("no mask: every query attends to every key");
    return notes;
}

std::string standard_path_note(std::uint64_t score_bytes) {
    return "standard path: the scores are stored, " + std::to_string(score_bytes) +
           " bytes (--attention streaming would not store them)";
}

namespace {

bool has_mask(const Masks& masks) {
    return masks.causal || !masks.attn_mask.empty() || !masks.key_padding.empty();
}

// Which keys each query of batch 0, head 0 may still see after step 8.
std::vector<std::vector<bool>> allowed_grid(const Tensor& scores) {
    const MatrixView unit = head_matrix(scores, 0, 0);
    std::vector<std::vector<bool>> grid(unit.rows, std::vector<bool>(unit.cols));
    for (std::size_t i = 0; i < unit.rows; ++i) {
        for (std::size_t j = 0; j < unit.cols; ++j)
            grid[i][j] = !(std::isinf(unit(i, j)) && unit(i, j) < 0);
    }
    return grid;
}

// What every phase of one forward pass needs to know.
struct Pass {
    Sizes s;
    std::size_t d_k;
    std::size_t threads;
    bool scale;
    Tracer& tracer;
};

using Qkv = HeadTensors;  // three tensors that travel together through steps 1-5

// K and V have G·d_k features: d_model unless key/value heads are shared.
std::string kv_width_name(const Sizes& s) { return s.kv_heads == s.heads ? "d_model" : "G·d_k"; }

// The matrices one (batch, head) unit reads: q (N, d_k), k and v (M, d_k).
struct UnitViews {
    MatrixView q, k, v;
};

// The one place that decides which K/V head query head i reads: kv_head_of (core/kv_heads.h),
// head i itself unless G < h key/value heads are shared.
UnitViews unit_views(const Qkv& heads, std::size_t b, std::size_t i, const Sizes& s) {
    const std::size_t g = kv_head_of(i, s.heads, s.kv_heads);
    return {head_matrix(heads.q, b, i), head_matrix(heads.k, b, g), head_matrix(heads.v, b, g)};
}

// Step 7's factor: 1/sqrt(d_k), or 1 under --no-scale.
float score_factor(std::size_t d_k, bool scaled) {
    return scaled ? float(1.0 / std::sqrt(double(d_k))) : 1.0f;
}

std::string plus_bias(const Tensor& bias, const char* name) {
    return bias.empty() ? std::string() : std::string(" + ") + name;
}

// 0: the inputs, named x when one tensor plays query, key and value.
void report_inputs(const Inputs& in, bool self, const Pass& p) {
    const std::string x = self ? "x" : "x_q";
    report(p.tracer, [&] { return make_step(0, "input", x, x, {"B", "N", "d_model"}, in.x_q); });
    if (self) return;
    const std::string kdim = p.s.kdim == p.s.d_model ? "d_model" : "kdim";
    const std::string vdim = p.s.vdim == p.s.d_model ? "d_model" : "vdim";
    report(p.tracer, [&] { return make_step(0, "input", "x_k", "x_k", {"B", "M", kdim}, in.x_k); });
    report(p.tracer, [&] { return make_step(0, "input", "x_v", "x_v", {"B", "M", vdim}, in.x_v); });
}

// 1-3: (B, N, d_model) @ (d_model, d_model)ᵀ -> (B, N, d_model); K and V with M rows.
Qkv project_qkv(const Weights& w, const Inputs& in, bool self, const Pass& p) {
    const std::uint64_t B = p.s.batch, N = p.s.seq_len, M = p.s.kv_len, E = p.s.d_model;
    const std::string xq = self ? "x" : "x_q", xk = self ? "x" : "x_k", xv = self ? "x" : "x_v";
    Qkv r{project(in.x_q.contiguous(), w.w_q, w.b_q, p.threads),
          project(in.x_k.contiguous(), w.w_k, w.b_k, p.threads),
          project(in.x_v.contiguous(), w.w_v, w.b_v, p.threads)};
    report(p.tracer, [&] {
        return make_step(1, "project", "Q", "Q = " + xq + " @ W_q.T" + plus_bias(w.b_q, "b_q"),
                         {"B", "N", "d_model"}, r.q, B * N * E * E);
    });
    report(p.tracer, [&] {
        return make_step(2, "project", "K", "K = " + xk + " @ W_k.T" + plus_bias(w.b_k, "b_k"),
                         {"B", "M", kv_width_name(p.s)}, r.k, B * M * r.k.size(2) * p.s.kdim);
    });
    report(p.tracer, [&] {
        return make_step(3, "project", "V", "V = " + xv + " @ W_v.T" + plus_bias(w.b_v, "b_v"),
                         {"B", "M", kv_width_name(p.s)}, r.v, B * M * r.v.size(2) * p.s.vdim);
    });
    return r;
}

// 4: (B, L, d_model) -> (B, L, h, d_k), no copy; 5: -> (B, h, L, d_k), strides swapped, no copy.
// K and V split into G heads instead of h.
Qkv split_heads(const Qkv& x, const Pass& p) {
    const std::size_t B = p.s.batch, N = p.s.seq_len, M = p.s.kv_len, h = p.s.heads;
    const std::size_t G = p.s.kv_heads;
    const std::string g = G == h ? "h" : "G";
    const Qkv viewed{x.q.view({B, N, h, p.d_k}), x.k.view({B, M, G, p.d_k}),
                     x.v.view({B, M, G, p.d_k})};
    report(p.tracer, [&] {
        return make_step(4, "view", "Q", "Q.view(B, N, h, d_k)", {"B", "N", "h", "d_k"}, viewed.q);
    });
    report(p.tracer, [&] {
        return make_step(4, "view", "K", "K.view(B, M, " + g + ", d_k)", {"B", "M", g, "d_k"},
                         viewed.k);
    });
    report(p.tracer, [&] {
        return make_step(4, "view", "V", "V.view(B, M, " + g + ", d_k)", {"B", "M", g, "d_k"},
                         viewed.v);
    });
    const Qkv heads{viewed.q.transpose(1, 2), viewed.k.transpose(1, 2), viewed.v.transpose(1, 2)};
    report(p.tracer, [&] {
        return make_step(5, "transpose", "Q", "Q.transpose(1, 2)", {"B", "h", "N", "d_k"}, heads.q);
    });
    report(p.tracer, [&] {
        Step step =
            make_step(5, "transpose", "K", "K.transpose(1, 2)", {"B", g, "M", "d_k"}, heads.k);
        if (G != h) step.notes = kv_sharing_notes(h, G);
        return step;
    });
    report(p.tracer, [&] {
        Step step =
            make_step(5, "transpose", "V", "V.transpose(1, 2)", {"B", g, "M", "d_k"}, heads.v);
        if (G != h) step.notes = kv_cost_notes(p.s);
        return step;
    });
    return heads;
}

// 6-10 on the (batch, head) units: scores, scale, mask, softmax, weights @ V.
// Fills result.weights (B, h, N, M) and returns the context (B, h, N, d_k).
// Untraced, steps 7-9 run fused over each unit's rows.
Tensor attend_standard(const Qkv& heads, const Masks& masks, bool zero_masked_rows, const Pass& p,
                       ForwardResult& result) {
    const Sizes& s = p.s;
    const std::size_t B = s.batch, N = s.seq_len, M = s.kv_len, h = s.heads, d_k = p.d_k;
    const std::size_t G = s.kv_heads;
    const Dims scores_dims = {"B", "h", "N", "M"};
    Tensor scores({B, h, N, M});
    auto unit_scores = [&](std::size_t b, std::size_t i) {
        return scores.data() + (b * h + i) * N * M;
    };

    // 6: (B, h, N, d_k) x (B, h, d_k, M) -> (B, h, N, M)
    const float factor = score_factor(d_k, p.scale);
    std::vector<std::size_t> masked_rows(B * h, 0);
    const bool fused = !p.tracer.enabled();
    for_each_unit(B, h, p.threads, [&](std::size_t b, std::size_t i) {
        const UnitViews unit = unit_views(heads, b, i, s);
        gemm(unit.q, unit.k.transposed(), unit_scores(b, i), M);
        if (fused) {
            masked_rows[b * h + i] = scale_mask_softmax(
                unit_scores(b, i), factor, head_mask(masks, b, i, s), zero_masked_rows);
        }
    });
    report(p.tracer, [&] {
        Step step = make_step(6, "scores", "scores", "scores = Q @ K.transpose(-2, -1)",
                              scores_dims, scores, std::uint64_t(B) * h * N * M * d_k);
        if (G != h) step.notes.push_back(kv_repeat_note(h, G));
        step.notes.push_back(standard_path_note(scores.numel() * sizeof(float)));
        return step;
    });

    // 7: keep the scores' variance near 1 whatever d_k is (unless asked not to)
    if (p.scale && !fused) {
        for_each_unit(B, h, p.threads, [&](std::size_t b, std::size_t i) {
            scale(unit_scores(b, i), N * M, factor);
        });
    }
    report(p.tracer, [&] {
        Step step = make_step(7, "scale", "scores",
                              p.scale ? "scores / math.sqrt(d_k)" : "scores  (not scaled)",
                              scores_dims, scores);
        std::ostringstream note;
        if (p.scale) {
            note << "1/sqrt(d_k) = 1/sqrt(" << d_k << ") = " << factor;
        } else {
            note << "--no-scale: the scores are not divided by sqrt(d_k) = sqrt(" << d_k << ")";
        }
        step.notes.push_back(note.str());
        return step;
    });

    // 8: blocked keys get -inf, float masks are added
    if (!fused) {
        for_each_unit(B, h, p.threads, [&](std::size_t b, std::size_t i) {
            float* unit = unit_scores(b, i);
            if (!masks.attn_mask.empty())
                add_mask(unit, unit_mask(masks.attn_mask, b, i, s), N * M);
            if (!masks.key_padding.empty())
                add_key_padding(unit, masks.key_padding.data() + b * M, N, M);
            if (masks.causal) apply_causal(unit, N, M);
        });
    }
    report(p.tracer, [&] {
        Step step =
            make_step(8, "mask", "scores",
                      has_mask(masks) ? "scores + mask  (blocked: -inf)" : "scores  (unchanged)",
                      scores_dims, scores);
        step.notes = mask_notes(masks, s);
        if (has_mask(masks) && N <= max_grid && M <= max_grid) step.allowed = allowed_grid(scores);
        return step;
    });

    // 9: each query's scores become weights over the M keys, summing to 1
    if (!fused) {
        const HeadMask unmasked{nullptr, nullptr, false, N, M};
        for_each_unit(B, h, p.threads, [&](std::size_t b, std::size_t i) {
            masked_rows[b * h + i] =
                scale_mask_softmax(unit_scores(b, i), 1.0f, unmasked, zero_masked_rows);
        });
    }
    result.weights = scores;
    for (std::size_t count : masked_rows) result.fully_masked_rows += count;
    report(p.tracer, [&] {
        return make_step(9, "softmax", "weights", "weights = torch.softmax(scores, dim=-1)",
                         scores_dims, result.weights);
    });

    // 10: (B, h, N, M) x (B, h, M, d_k) -> (B, h, N, d_k)
    Tensor context({B, h, N, d_k});
    for_each_unit(B, h, p.threads, [&](std::size_t b, std::size_t i) {
        gemm(head_matrix(result.weights, b, i), unit_views(heads, b, i, s).v,
             context.data() + (b * h + i) * N * d_k, d_k);
    });
    report(p.tracer, [&] {
        return make_step(10, "context", "context", "context = weights @ V", {"B", "h", "N", "d_k"},
                         context, std::uint64_t(B) * h * N * M * d_k);
    });
    return context;
}

// 6-10 on the streaming path: one traced step, no (B, h, N, M) tensor. The context
// is stored in (B, N, h, d_k) order and returned as its (B, h, N, d_k) transpose.
Tensor attend_streamed(const Qkv& heads, const Masks& masks, bool zero_masked_rows,
                       const Pass& p, ForwardResult& result) {
    const Sizes& s = p.s;
    const std::size_t B = s.batch, N = s.seq_len, M = s.kv_len, h = s.heads, d_k = p.d_k;
    Tensor stored({B, N, h, d_k});
    float* out = stored.data();
    std::vector<std::size_t> masked_rows(B * h, 0);
    for_each_unit(B, h, p.threads, [&](std::size_t b, std::size_t i) {
        const UnitViews unit = unit_views(heads, b, i, s);
        masked_rows[b * h + i] =
            attend_streaming(unit.q, unit.k, unit.v, head_mask(masks, b, i, s), score_factor(d_k, p.scale),
                             zero_masked_rows, out + b * N * h * d_k + i * d_k, h * d_k);
    });
    for (std::size_t count : masked_rows) result.fully_masked_rows += count;
    const Tensor context = stored.transpose(1, 2);
    report(p.tracer, [&] {
        Step step =
            make_step(10, "attend", "context",
                      "context = softmax(Q @ K.T / sqrt(d_k) + mask) @ V, streamed",
                      {"B", "h", "N", "d_k"}, context, 2 * std::uint64_t(B) * h * N * M * d_k);
        const std::uint64_t saved = std::uint64_t(B) * h * N * M * sizeof(float);
        step.notes = mask_notes(masks, s);
        step.notes.push_back(
            "streaming path: steps 6-9 run on tiles of " + std::to_string(stream_query_tile) +
            " queries x " + std::to_string(stream_key_tile) +
            " keys with an online softmax (a running max and sum per query), so the (B, h, N, M)"
            " scores, " + std::to_string(saved) + " bytes, are never stored");
        step.notes.push_back("the context goes straight into (B, N, h, d_k) order: step 12 has "
                             "nothing to copy");
        return step;
    });
    return context;
}

// 11: (B, h, N, d_k) -> (B, N, h, d_k), no copy; 12: the one copy; 13: -> (B, N, d_model).
Tensor combine_heads(const Tensor& context, const Pass& p) {
    const Tensor back = context.transpose(1, 2);
    report(p.tracer, [&] {
        return make_step(11, "transpose", "context", "context.transpose(1, 2)",
                         {"B", "N", "h", "d_k"}, back);
    });
    const Tensor packed = back.contiguous();
    report(p.tracer, [&] {
        Step step = make_step(12, "contiguous", "context", "context.contiguous()",
                              {"B", "N", "h", "d_k"}, packed);
        step.copied_bytes = packed.shares_storage_with(back) ? 0 : packed.numel() * sizeof(float);
        return step;
    });
    const Tensor concat = packed.view({p.s.batch, p.s.seq_len, p.s.d_model});
    report(p.tracer, [&] {
        return make_step(13, "view", "concat", "concat = context.view(B, N, d_model)",
                         {"B", "N", "d_model"}, concat);
    });
    return concat;
}

// Head ablation: context (B, h, N, d_k) with head `head`'s (N, d_k) slices set to 0,
// so that head adds nothing to the concat and W_o sees only the others.
// Zeroes context[:, head] through the strides: the standard path's context is
// (B, h, N, d_k) in memory, the streaming path's a transposed view of (B, N, h, d_k).
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

}  // namespace

Tensor project(const Tensor& x, const Tensor& w, const Tensor& bias, std::size_t threads) {
    const std::size_t rows = x.size(0) * x.size(1), out = w.size(0);
    Tensor y({x.size(0), x.size(1), out});
    // Each thread packs the whole of the side it does not split: with fewer rows than
    // outputs, split the outputs (each thread packs x and its share of W) rather than
    // the rows (each thread would pack all of W for a few rows).
    const std::size_t panel = 32;  // split outputs in whole register-tile panels
    if (rows < out && threads > 1) {
        parallel_for((out + panel - 1) / panel, threads, [&](std::size_t begin, std::size_t end) {
            linear_columns_fast(x, w, bias, y, begin * panel, std::min(out, end * panel));
        });
        return y;
    }
    parallel_for(rows, threads, [&](std::size_t begin, std::size_t end) {
        linear_rows_fast(x, w, bias, y, begin, end);
    });
    return y;
}

std::size_t Weights::parameter_count() const {
    return w_q.numel() + w_k.numel() + w_v.numel() + w_o.numel() + b_q.numel() + b_k.numel() +
           b_v.numel() + b_o.numel();  // an absent bias is an empty tensor: 0 elements
}

std::uint64_t forward_macs(const Sizes& s) {
    const std::string what = "the multiply-adds of this configuration";
    return checked_sum(
        {checked_product({s.batch, s.seq_len, s.d_model, s.d_model, 2}, what),  // Q, W_O
         checked_product({s.batch, s.kv_len, s.kv_heads, s.d_model / s.heads, s.kdim + s.vdim},
                         what),  // K, V: G·d_k features each
         checked_product({s.batch, s.seq_len, s.kv_len, s.d_model, 2}, what)},  // 6 and 10
        what);
}

std::uint64_t forward_bytes(const Sizes& s, AttentionPath path, std::size_t threads) {
    const std::string what = "the memory for this configuration";
    const bool standard = path == AttentionPath::Standard;
    const std::size_t d_k = s.d_model / s.heads;
    // packing buffers only grow, so a thread may keep the projections' and the attention's
    const std::uint64_t per_thread =
        std::uint64_t(gemm_scratch_floats(std::max({s.d_model, s.kdim, s.vdim}), s.d_model)) +
        (standard ? std::max(gemm_scratch_floats(d_k, s.kv_len), gemm_scratch_floats(s.kv_len, d_k))
                  : streaming_scratch_floats(d_k));
    const std::uint64_t floats = checked_sum(
        {// Q, context, output; the standard path's concat is one more copy
         checked_product({s.batch, s.seq_len, s.d_model, standard ? 4u : 3u}, what),
         checked_product({s.batch, s.kv_len, s.kv_heads, d_k, 2}, what),  // K, V
         standard ? checked_product({s.batch, s.heads, s.seq_len, s.kv_len}, what) : 0,
         checked_product({threads, per_thread}, what)},
        what);
    return checked_product({floats, sizeof(float)}, what);
}

Sizes check_shapes(const Weights& w, const Inputs& in, const Masks& masks, std::size_t heads) {
    const std::size_t E = w.d_model();
    if (heads == 0 || E % heads != 0) {
        throw Error("d_model " + std::to_string(E) + " is not divisible by heads " +
                    std::to_string(heads) + "; d_k = d_model / h must be a whole number");
    }
    if (in.x_q.dim() != 3 || in.x_q.size(2) != E) {
        throw Error(shape_error("query", "(B, N, " + std::to_string(E) + ")", in.x_q));
    }
    const std::size_t B = in.x_q.size(0);
    const std::size_t N = in.x_q.size(1);
    if (in.x_k.dim() != 3 || in.x_k.size(0) != B || in.x_k.size(2) != w.kdim()) {
        throw Error(shape_error(
            "key", "(" + std::to_string(B) + ", M, " + std::to_string(w.kdim()) + ")", in.x_k));
    }
    const std::size_t M = in.x_k.size(1);
    if (in.x_v.dim() != 3 || in.x_v.size(0) != B || in.x_v.size(1) != M ||
        in.x_v.size(2) != w.vdim()) {
        throw Error(shape_error("value", to_string({B, M, w.vdim()}), in.x_v));
    }
    const Tensor& am = masks.attn_mask;
    if (!am.empty()) {
        const bool plane =
            am.dim() >= 2 && am.size(am.dim() - 2) == N && am.size(am.dim() - 1) == M;
        const bool lead =
            am.dim() == 2 || (am.dim() == 3 && (am.size(0) == B || am.size(0) == B * heads));
        if (!plane || !lead) {
            throw Error(shape_error("attn_mask",
                                    to_string({N, M}) + ", " + to_string({B, N, M}) + " or " +
                                        to_string({B * heads, N, M}),
                                    am));
        }
    }
    if (!masks.key_padding.empty() && masks.key_padding.shape() != Shape{B, M}) {
        throw Error(shape_error("key_padding_mask", to_string({B, M}), masks.key_padding));
    }
    const std::size_t d_k = E / heads;
    const std::size_t G = w.kv_width() / d_k;
    if (w.kv_width() % d_k != 0 || G == 0 || heads % G != 0 || w.w_v.size(0) != w.kv_width()) {
        throw Error("W_k " + to_string(w.w_k.shape()) + " and W_v " + to_string(w.w_v.shape()) +
                    " must both have G·d_k rows (d_k = " + std::to_string(d_k) +
                    ") for G key/value heads dividing h = " + std::to_string(heads));
    }
    return {B, N, M, E, w.kdim(), w.vdim(), heads, G};
}

ForwardResult forward(const Weights& w, const Inputs& in, const Masks& masks,
                      const ForwardOptions& options, Tracer& tracer) {
    const Sizes s = check_shapes(w, in, masks, options.heads);
    if (options.ablate_head && *options.ablate_head >= s.heads) {
        throw Error("cannot ablate head " + std::to_string(*options.ablate_head) +
                    ": the heads are 0.." + std::to_string(s.heads - 1));
    }
    const Pass pass{s, s.d_model / s.heads, options.threads, options.scale, tracer};
    const bool self = in.self_attention();

    report_inputs(in, self, pass);
    return forward_from_heads(w, split_heads(project_qkv(w, in, self, pass), pass), masks, s,
                              options, tracer);  // 1-5
}

ForwardResult forward_from_heads(const Weights& w, HeadTensors heads, const Masks& masks,
                                 const Sizes& s, const ForwardOptions& options, Tracer& tracer) {
    const Pass pass{s, s.d_model / s.heads, options.threads, options.scale, tracer};
    ForwardResult result;
    Tensor context = options.path == AttentionPath::Streaming
                         ? attend_streamed(heads, masks, options.zero_masked_rows, pass, result)
                         : attend_standard(heads, masks, options.zero_masked_rows, pass, result);
    heads = HeadTensors{};  // 6-10 done: Q, K and V are freed before steps 11-14
    if (options.ablate_head) zero_head(context, *options.ablate_head);
    const Tensor concat = combine_heads(context, pass);                                   // 11-13

    // 14: mix the heads. (B, N, d_model) @ (d_model, d_model)ᵀ -> (B, N, d_model)
    result.output = project(concat, w.w_o, w.b_o, options.threads);
    report(tracer, [&] {
        return make_step(14, "project", "output",
                         "output = concat @ W_o.T" + plus_bias(w.b_o, "b_o"), {"B", "N", "d_model"},
                         result.output, std::uint64_t(s.batch) * s.seq_len * s.d_model * s.d_model);
    });
    return result;
}

}  // namespace mha
