// Steps 1-5 with one projection for Q, K and V, then steps 6-14 as in forward().

#include "core/fused_qkv.h"

#include <vector>

#include "core/error.h"

namespace mha {

namespace {

Tensor stacked(const Tensor& q, const Tensor& k, const Tensor& v) {
    std::vector<float> values;
    for (const Tensor* part : {&q, &k, &v}) {
        const std::vector<float> rows = part->to_vector();
        values.insert(values.end(), rows.begin(), rows.end());
    }
    Shape shape = q.shape();
    shape[0] *= 3;
    return Tensor(shape, values);
}

}  // namespace

Tensor stacked_qkv_weight(const Weights& w) { return stacked(w.w_q, w.w_k, w.w_v); }

Tensor stacked_qkv_bias(const Weights& w) {
    if (w.b_q.empty() && w.b_k.empty() && w.b_v.empty()) return Tensor();
    const auto or_zeros = [&w](const Tensor& b) { return b.empty() ? Tensor({w.d_model()}) : b; };
    return stacked(or_zeros(w.b_q), or_zeros(w.b_k), or_zeros(w.b_v));
}

ForwardResult forward_fused_qkv(const Weights& w, const Inputs& in, const Masks& masks,
                                const ForwardOptions& options, Tracer& tracer) {
    const Sizes s = check_shapes(w, in, masks, options.heads);
    if (!in.self_attention() || s.kv_heads != s.heads || s.kdim != s.d_model ||
        s.vdim != s.d_model) {
        throw Error("--fused-qkv needs self-attention with K and V as wide as Q "
                    "(no --kv-heads, --key/--value or kdim/vdim)");
    }
    const std::size_t B = s.batch, N = s.seq_len, E = s.d_model, h = s.heads, d_k = E / h;
    report(tracer, [&] { return make_step(0, "input", "x", "x", {"B", "N", "d_model"}, in.x_q); });

    // 1: (B, N, d_model) @ (3·d_model, d_model)ᵀ -> (B, N, 3·d_model)
    const Tensor bias = stacked_qkv_bias(w);
    const Tensor qkv = project(in.x_q.contiguous(), stacked_qkv_weight(w), bias, options.threads);
    report(tracer, [&] {
        Step step = make_step(1, "project", "qkv",
                              std::string("qkv = x @ W_qkv.T") + (bias.empty() ? "" : " + b_qkv"),
                              {"B", "N", "3·d_model"}, qkv, std::uint64_t(B) * N * 3 * E * E);
        step.notes.push_back("W_qkv (3·d_model, d_model) is W_q, W_k and W_v stacked: one "
                             "matrix product instead of three");
        return step;
    });

    // 4: (B, N, 3·d_model) -> (B, N, 3, h, d_k), no copy
    const Tensor split = qkv.view({B, N, 3, h, d_k});
    report(tracer, [&] {
        return make_step(4, "view", "qkv", "qkv.view(B, N, 3, h, d_k)",
                         {"B", "N", "qkv", "h", "d_k"}, split);
    });

    // 5: -> (3, B, h, N, d_k), strides permuted, no copy; then three (B, h, N, d_k) slices
    const Tensor heads = split.permute({2, 0, 3, 1, 4});
    report(tracer, [&] {
        return make_step(5, "permute", "qkv", "qkv.permute(2, 0, 3, 1, 4)",
                         {"qkv", "B", "h", "N", "d_k"}, heads);
    });
    HeadTensors qkv_heads{heads.select(0, 0), heads.select(0, 1), heads.select(0, 2)};
    const char* names[] = {"Q", "K", "V"};
    const Tensor* parts[] = {&qkv_heads.q, &qkv_heads.k, &qkv_heads.v};
    for (std::size_t i = 0; i < 3; ++i) {
        report(tracer, [&] {
            return make_step(5, "unbind", names[i],
                             std::string(names[i]) + " = qkv[" + std::to_string(i) + "]",
                             {"B", "h", "N", "d_k"}, *parts[i]);
        });
    }
    return forward_from_heads(w, std::move(qkv_heads), masks, s, options, tracer);
}

}  // namespace mha
