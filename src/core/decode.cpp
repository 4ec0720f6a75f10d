// Decoding token by token with a KV cache.
//
//   x (B, T, d_model); cache_k, cache_v (B, G, T, d_k) filled one position per token
//   for t = 1 .. T (x_t = x[:, t-1], shape (B, 1, d_model)):
//     q_t = x_t W_q.T + b_q      (B, 1, d_model) -> (B, h, 1, d_k)
//     k_t, v_t likewise           (B, 1, G·d_k)  -> cache[:, :, t-1]
//     scores = q_t @ K[:, :, :t].T / sqrt(d_k)   (B, h, 1, t)   no mask needed: the future
//                                                               is not in the cache yet
//     out_t = softmax(scores) @ V[:, :, :t]      (B, h, 1, d_k) -> (B, 1, d_model) W_o.T + b_o

#include "core/decode.h"

#include <algorithm>
#include <cmath>

#include "core/checked.h"
#include "core/error.h"
#include "core/kv_heads.h"
#include "core/ops.h"

namespace mha {

namespace {

// Everything one decoding run keeps from token to token.
struct Cache {
    Tensor k, v;  // (B, G, T, d_k): position t-1 written at token t
};

// Row t of x (B, T, E) as a (B, 1, E) tensor.
Tensor token_row(const Tensor& x, std::size_t t) {
    const std::size_t B = x.size(0), T = x.size(1), E = x.size(2);
    Tensor row({B, 1, E});
    for (std::size_t b = 0; b < B; ++b) {
        const float* from = x.data() + (b * T + t) * E;
        std::copy(from, from + E, row.data() + b * E);
    }
    return row;
}

// Writes the (B, 1, G·d_k) projection of token t into position t of the (B, G, T, d_k) cache.
void append(const Tensor& projected, std::size_t t, Tensor& cache) {
    const std::size_t B = cache.size(0), G = cache.size(1), T = cache.size(2), d_k = cache.size(3);
    for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t g = 0; g < G; ++g) {
            const float* from = projected.data() + (b * G + g) * d_k;
            std::copy(from, from + d_k, cache.data() + ((b * G + g) * T + t) * d_k);
        }
    }
}

// The first `length` positions of cache[b, g]: a (length, d_k) matrix.
MatrixView cached(const Tensor& cache, std::size_t b, std::size_t g, std::size_t length) {
    const std::size_t G = cache.size(1), T = cache.size(2), d_k = cache.size(3);
    return {cache.data() + (b * G + g) * T * d_k, length, d_k, d_k, 1};
}

}  // namespace

std::uint64_t decode_bytes(const Sizes& s) {
    const std::string what = "the memory for decoding";
    const std::uint64_t d_k = s.d_model / s.heads;
    return checked_product(
        {sizeof(float),
         checked_sum({checked_product({2, s.batch, s.kv_heads, s.seq_len, d_k}, what),  // cache
                      checked_product({s.batch, s.heads, s.seq_len, s.seq_len}, what),  // weights
                      checked_product({s.batch, s.seq_len, s.d_model}, what)},           // output
                     what)},
        what);
}

ForwardResult decode(const Weights& w, const Inputs& in, const Masks& masks,
                     const ForwardOptions& options, Tracer& tracer) {
    const Sizes s = check_shapes(w, in, masks, options.heads);
    if (!in.self_attention() || !masks.attn_mask.empty() || !masks.key_padding.empty()) {
        throw Error("--decode works on one sequence attending to itself, causal by "
                    "construction: no --key/--value, --mask or --key-padding-mask");
    }
    const std::size_t B = s.batch, T = s.seq_len, E = s.d_model, h = s.heads, G = s.kv_heads;
    const std::size_t d_k = E / h;
    const float factor = float(1.0 / std::sqrt(double(d_k)));
    const std::string g = G == h ? "h" : "G";
    report(tracer, [&] { return make_step(0, "input", "x", "x", {"B", "T", "d_model"}, in.x_q); });

    Cache cache{Tensor({B, G, T, d_k}), Tensor({B, G, T, d_k})};
    ForwardResult result;
    result.output = Tensor({B, T, E});
    result.weights = Tensor({B, h, T, T});
    const Strides cache_strides = cache.k.strides();
    for (std::size_t t = 0; t < T; ++t) {
        const std::size_t length = t + 1;  // positions in the cache once this token is added
        const std::string token = "token " + std::to_string(length) + " of " + std::to_string(T);
        const Tensor x_t = token_row(in.x_q, t);
        const Tensor q = project(x_t, w.w_q, w.b_q, options.threads);  // (B, 1, h·d_k)
        append(project(x_t, w.w_k, w.b_k, options.threads), t, cache.k);
        append(project(x_t, w.w_v, w.b_v, options.threads), t, cache.v);
        report(tracer, [&] {
            Step step = make_layout_step(2, "cache", "K_cache",
                                    "K_cache[:, :, " + std::to_string(t) + "] = x_t @ W_k.T" +
                                        (w.b_k.empty() ? "" : " + b_k"),
                                    {"B", g, "t", "d_k"}, {B, G, length, d_k}, cache_strides,
                                    std::uint64_t(B) * (E + 2 * G * d_k) * E);
            step.notes.push_back(token + ": projects only x_t (B, 1, d_model) into q_t, k_t "
                                         "and v_t; K and V of earlier tokens come from the cache "
                                         "(V_cache likewise)");
            step.notes.push_back("the cache is allocated once for all T positions: the first t "
                                 "are a view into it, non-contiguous while t < T");
            return step;
        });

        // scores (B, h, 1, t), then weights and the context row of every head
        Tensor weights({B, h, 1, length});
        Tensor concat({B, 1, E});
        for (std::size_t b = 0; b < B; ++b) {
            for (std::size_t i = 0; i < h; ++i) {
                const std::size_t kv = kv_head_of(i, h, G);
                const MatrixView q_row{q.data() + b * E + i * d_k, 1, d_k, d_k, 1};
                float* row = weights.data() + (b * h + i) * length;
                matmul(q_row, cached(cache.k, b, kv, length).transposed(), row, length);
                scale(row, length, factor);
                softmax_rows(row, 1, length, false);
                matmul({row, 1, length, length, 1}, cached(cache.v, b, kv, length),
                       concat.data() + b * E + i * d_k, d_k);
                std::copy(row, row + length, result.weights.data() + ((b * h + i) * T + t) * T);
            }
        }
        report(tracer, [&] {
            Step step = make_step(9, "softmax", "weights",
                                  "weights = softmax(q_t @ K_cache.mT / sqrt(d_k))",
                                  {"B", "h", "N", "t"}, weights, std::uint64_t(B) * h * length * d_k);
            step.notes.push_back("one query (N = 1) against the t = " + std::to_string(length) +
                                 " cached positions; no mask: later tokens are not cached yet");
            return step;
        });

        const Tensor out = project(concat, w.w_o, w.b_o, options.threads);  // (B, 1, d_model)
        for (std::size_t b = 0; b < B; ++b) {
            std::copy(out.data() + b * E, out.data() + (b + 1) * E,
                      result.output.data() + (b * T + t) * E);
        }
        report(tracer, [&] {
            Step step = make_step(14, "project", "out_t",
                                  "out_t = (weights @ V_cache).view(B, N, d_model) @ W_o.T" +
                                      std::string(w.b_o.empty() ? "" : " + b_o"),
                                  {"B", "N", "d_model"}, out,
                                  std::uint64_t(B) * h * length * d_k + std::uint64_t(B) * E * E);
            step.notes.push_back(token + " done; the cache holds " +
                                 std::to_string(2 * B * G * length * d_k * sizeof(float)) +
                                 " bytes of K and V");
            return step;
        });
    }
    return result;
}

}  // namespace mha
