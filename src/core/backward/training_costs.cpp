// What training one layer costs: the forward's kept tensors and the multiply-adds, planned.

#include "core/backward/training_costs.h"

#include "core/checked.h"
#include "core/pass/planner.h"

namespace mha {

namespace {

KeptTensor kept(const std::string& name, std::vector<std::string> dims, Shape shape) {
    std::uint64_t bytes = sizeof(float);
    for (std::size_t size : shape) bytes = checked_product({bytes, size}, "the kept tensors");
    return {name, std::move(dims), std::move(shape), bytes};
}

}  // namespace

std::vector<KeptTensor> planned_kept(const PassSpec& spec) {
    const Sizes& s = spec.sizes;
    const std::size_t B = s.batch, N = s.seq_len, M = s.kv_len, h = s.heads, G = s.kv_heads;
    const std::size_t d_k = s.d_k(), d_v = s.d_v();
    const std::size_t inputs_m = M - spec.appended.count();  // the rows x_k and x_v have
    std::vector<KeptTensor> list;
    if (spec.self_attention) {
        list.push_back(kept("x", {"B", "N", "d_model"}, {B, N, s.d_model}));
    } else {
        list.push_back(kept("x_q", {"B", "N", "d_model"}, {B, N, s.d_model}));
        list.push_back(kept("x_k", {"B", "M", "kdim"}, {B, inputs_m, s.kdim}));
        list.push_back(kept("x_v", {"B", "M", "vdim"}, {B, inputs_m, s.vdim}));
    }
    const std::string g = G == h ? "h" : "G", dv = v_dim_name(s);  // the names the trace uses
    const std::vector<std::string> q_dims = {"B", "h", "N", "d_k"}, k_dims = {"B", g, "M", "d_k"};
    if (spec.qk_norm) {  // QK-norm's backward reads what it normalised
        list.push_back(kept("Q_raw", q_dims, {B, h, N, d_k}));
        list.push_back(kept("K_raw", k_dims, {B, G, M, d_k}));
    }
    list.push_back(kept("Q", q_dims, {B, h, N, d_k}));
    list.push_back(kept("K", k_dims, {B, G, M, d_k}));
    list.push_back(kept("V", {"B", g, "M", dv}, {B, G, M, d_v}));
    if (spec.path == AttentionPath::Standard) {
        list.push_back(kept("P", {"B", "h", "N", "M"}, {B, h, N, M}));
    } else {
        list.push_back(kept("lse", {"B", "h", "N"}, {B, h, N}));
    }
    list.push_back(kept("O", {"B", "h", "N", dv}, {B, h, N, d_v}));
    list.push_back(kept("concat", {"B", "N", concat_width_name(s)}, {B, N, h * d_v}));
    return list;
}

std::uint64_t kept_bytes(const std::vector<KeptTensor>& kept) {
    std::uint64_t total = 0;
    for (const KeptTensor& t : kept) total = checked_sum({total, t.bytes}, "the kept tensors");
    return total;
}

MacSplit split_macs(const std::vector<Step>& steps) {
    MacSplit split;
    for (const Step& step : steps) {
        std::uint64_t& part = step.backward ? split.backward : split.forward;
        part = checked_sum({part, step.macs}, "the multiply-adds");
    }
    return split;
}

}  // namespace mha
