// Attention head by head, each with its own slices of W_q, W_k and W_v.
//
//   x_q (B, N, d_model)  x_k (B, M, kdim)  x_v (B, M, vdim)
//   for every head i (reading key/value head g = i / (h / G)):
//     1-3  Q_i = x_q W_q^i.T + b_q^i        (B, N, d_k);  K_i, V_i (B, M, d_k) from slice g
//     6    scores_i = Q_i @ K_i.T           (B, N, M)
//     9    weights_i = softmax(scores_i / sqrt(d_k) + mask)
//     10   head_i = weights_i @ V_i          (B, N, d_k)
//   13   concat = cat(head_0 .. head_{h-1}, dim=-1)   (B, N, d_model)   a copy
//   14   output = concat W_o.T + b_o                  (B, N, d_model)

#include "core/per_head.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/kv_heads.h"
#include "core/ops.h"

namespace mha {

namespace {

// "[8:12]": the rows of head i's slice, as Python writes them.
std::string rows_text(std::size_t first, std::size_t count) {
    return "[" + std::to_string(first) + ":" + std::to_string(first + count) + "]";
}

std::string projection_text(const std::string& out, const std::string& x, const char* w,
                            const char* b, bool bias, const std::string& rows) {
    return out + " = " + x + " @ " + w + rows + ".T" + (bias ? std::string(" + ") + b + rows : "");
}

// The (L, d_k) matrix of batch row b in a contiguous (B, L, d_k) tensor.
MatrixView batch_matrix(const Tensor& t, std::size_t b) {
    const std::size_t rows = t.size(1), cols = t.size(2);
    return {t.data() + b * rows * cols, rows, cols, cols, 1};
}

struct Head {
    Tensor q, k, v;      // (B, N, d_k), (B, M, d_k), (B, M, d_k)
    Tensor weights;      // (B, N, M)
    Tensor context;      // (B, N, d_k)
    std::size_t fully_masked_rows = 0;
};

Head attend_head(const Weights& w, const Inputs& in, const Masks& masks, const Sizes& s,
                 std::size_t i, const ForwardOptions& options, Tracer& tracer) {
    const std::size_t B = s.batch, N = s.seq_len, M = s.kv_len, d_k = s.d_model / s.heads;
    const std::size_t g = kv_head_of(i, s.heads, s.kv_heads);
    const bool self = in.self_attention();
    const std::string id = std::to_string(i), q_rows = rows_text(i * d_k, d_k),
                      kv_rows = rows_text(g * d_k, d_k);
    Head head;
    head.q = project(in.x_q.contiguous(), row_slice(w.w_q, i * d_k, d_k),
                     row_slice(w.b_q, i * d_k, d_k), options.threads);
    head.k = project(in.x_k.contiguous(), row_slice(w.w_k, g * d_k, d_k),
                     row_slice(w.b_k, g * d_k, d_k), options.threads);
    head.v = project(in.x_v.contiguous(), row_slice(w.w_v, g * d_k, d_k),
                     row_slice(w.b_v, g * d_k, d_k), options.threads);
    report(tracer, [&] {
        return make_step(1, "project", "Q_" + id,
                         projection_text("Q_" + id, self ? "x" : "x_q", "W_q", "b_q",
                                         !w.b_q.empty(), q_rows),
                         {"B", "N", "d_k"}, head.q, std::uint64_t(B) * N * d_k * s.d_model);
    });
    report(tracer, [&] {
        Step step = make_step(2, "project", "K_" + id,
                              projection_text("K_" + id, self ? "x" : "x_k", "W_k", "b_k",
                                              !w.b_k.empty(), kv_rows),
                              {"B", "M", "d_k"}, head.k, std::uint64_t(B) * M * d_k * s.kdim);
        if (s.kv_heads != s.heads) step.notes.push_back("query head " + id + " reads K/V head " + std::to_string(g));
        return step;
    });
    report(tracer, [&] {
        return make_step(3, "project", "V_" + id,
                         projection_text("V_" + id, self ? "x" : "x_v", "W_v", "b_v",
                                         !w.b_v.empty(), kv_rows),
                         {"B", "M", "d_k"}, head.v, std::uint64_t(B) * M * d_k * s.vdim);
    });

    // 6: (B, N, d_k) x (B, d_k, M) -> (B, N, M)
    head.weights = Tensor({B, N, M});
    for (std::size_t b = 0; b < B; ++b) {
        matmul(batch_matrix(head.q, b), batch_matrix(head.k, b).transposed(),
               head.weights.data() + b * N * M, M);
    }
    report(tracer, [&] {
        return make_step(6, "scores", "scores_" + id, "scores_" + id + " = Q_" + id + " @ K_" + id + ".T",
                         {"B", "N", "M"}, head.weights, std::uint64_t(B) * N * M * d_k);
    });

    // 7-9: scale, mask, softmax over the M keys
    const float factor = float(1.0 / std::sqrt(double(d_k)));
    for (std::size_t b = 0; b < B; ++b) {
        float* unit = head.weights.data() + b * N * M;
        scale(unit, N * M, factor);
        if (!masks.key_padding.empty()) add_key_padding(unit, masks.key_padding.data() + b * M, N, M);
        if (masks.causal) apply_causal(unit, N, M);
        head.fully_masked_rows += softmax_rows(unit, N, M, options.zero_masked_rows);
    }
    report(tracer, [&] {
        Step step = make_step(9, "softmax", "weights_" + id,
                              "weights_" + id + " = softmax(scores_" + id + " / sqrt(d_k) + mask)",
                              {"B", "N", "M"}, head.weights);
        step.notes = mask_notes(masks, s);
        return step;
    });

    // 10: (B, N, M) x (B, M, d_k) -> (B, N, d_k)
    head.context = Tensor({B, N, d_k});
    for (std::size_t b = 0; b < B; ++b) {
        matmul(batch_matrix(head.weights, b), batch_matrix(head.v, b),
               head.context.data() + b * N * d_k, d_k);
    }
    report(tracer, [&] {
        return make_step(10, "context", "head_" + id, "head_" + id + " = weights_" + id + " @ V_" + id,
                         {"B", "N", "d_k"}, head.context, std::uint64_t(B) * N * M * d_k);
    });
    return head;
}

}  // namespace

Tensor row_slice(const Tensor& t, std::size_t first, std::size_t count) {
    if (t.empty()) return t;
    Shape shape = t.shape();
    shape[0] = count;
    const std::size_t row = t.numel() / t.size(0);
    const float* begin = t.contiguous().data() + first * row;
    return Tensor(shape, std::vector<float>(begin, begin + count * row));
}

ForwardResult forward_per_head(const Weights& w, const Inputs& in, const Masks& masks,
                               const ForwardOptions& options, Tracer& tracer) {
    const Sizes s = check_shapes(w, in, masks, options.heads);
    if (!masks.attn_mask.empty()) {
        throw Error("--per-head supports --causal and --key-padding-mask, not --mask");
    }
    const std::size_t B = s.batch, N = s.seq_len, M = s.kv_len, E = s.d_model, h = s.heads;
    const std::size_t d_k = E / h;
    report(tracer, [&] {
        return make_step(0, "input", in.self_attention() ? "x" : "x_q",
                         in.self_attention() ? "x" : "x_q", {"B", "N", "d_model"}, in.x_q);
    });

    ForwardResult result;
    result.weights = Tensor({B, h, N, M});
    Tensor concat({B, N, E});
    for (std::size_t i = 0; i < h; ++i) {
        const Head head = attend_head(w, in, masks, s, i, options, tracer);
        result.fully_masked_rows += head.fully_masked_rows;
        for (std::size_t b = 0; b < B; ++b) {
            const float* weights = head.weights.data() + b * N * M;
            std::copy(weights, weights + N * M, result.weights.data() + (b * h + i) * N * M);
            for (std::size_t n = 0; n < N; ++n) {
                const float* row = head.context.data() + (b * N + n) * d_k;
                std::copy(row, row + d_k, concat.data() + (b * N + n) * E + i * d_k);
            }
        }
    }
    report(tracer, [&] {
        Step step = make_step(13, "concat", "concat",
                              "concat = torch.cat([head_0, ..., head_" + std::to_string(h - 1) +
                                  "], dim=-1)",
                              {"B", "N", "d_model"}, concat);
        step.copied_bytes = concat.numel() * sizeof(float);
        step.notes.push_back("the packed form gets this by transpose, contiguous and view; here "
                             "every head's (B, N, d_k) block is copied into place");
        return step;
    });

    // 14: (B, N, d_model) @ (d_model, d_model)ᵀ -> (B, N, d_model)
    result.output = project(concat, w.w_o, w.b_o, options.threads);
    report(tracer, [&] {
        return make_step(14, "project", "output",
                         std::string("output = concat @ W_o.T") + (w.b_o.empty() ? "" : " + b_o"),
                         {"B", "N", "d_model"}, result.output, std::uint64_t(B) * N * E * E);
    });
    return result;
}

}  // namespace mha
