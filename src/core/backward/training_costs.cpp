// What training one layer costs: the forward's kept tensors, read off its run.

#include "core/backward/training_costs.h"

#include "core/checked.h"

namespace mha {

namespace {

KeptTensor kept(const std::string& name, std::vector<std::string> dims, const Tensor& t) {
    std::uint64_t bytes = sizeof(float);
    for (std::size_t size : t.shape()) bytes = checked_product({bytes, size}, "the kept tensors");
    return {name, std::move(dims), t.shape(), bytes};
}

}  // namespace

std::vector<KeptTensor> kept_tensors(const Inputs& in, const Kept& k, const Tensor& weights) {
    std::vector<KeptTensor> list;
    if (in.self_attention()) {
        list.push_back(kept("x", {"B", "N", "d_model"}, in.x_q));
    } else {
        list.push_back(kept("x_q", {"B", "N", "d_model"}, in.x_q));
        list.push_back(kept("x_k", {"B", "M", "kdim"}, in.x_k));
        list.push_back(kept("x_v", {"B", "M", "vdim"}, in.x_v));
    }
    // the names the trace uses
    const std::string g = k.k.size(1) == k.q.size(1) ? "h" : "G";
    const std::string dv = k.v.size(3) == k.q.size(3) ? "d_k" : "d_v";
    const std::size_t width = k.concat.size(2), d_model = in.x_q.size(2);
    const std::string concat = width == d_model ? "d_model" : dv == "d_k" ? "h·d_k" : "h·d_v";
    const std::vector<std::string> q_dims = {"B", "h", "N", "d_k"}, k_dims = {"B", g, "M", "d_k"};
    if (!k.q_raw.empty()) {  // QK-norm's backward reads what it normalised
        list.push_back(kept("Q_raw", q_dims, k.q_raw));
        list.push_back(kept("K_raw", k_dims, k.k_raw));
    }
    list.push_back(kept("Q", q_dims, k.q));
    list.push_back(kept("K", k_dims, k.k));
    list.push_back(kept("V", {"B", g, "M", dv}, k.v));
    if (!weights.empty()) {
        list.push_back(kept("P", {"B", "h", "N", "M"}, weights));
    } else {
        list.push_back(kept("lse", {"B", "h", "N"}, k.lse));
    }
    list.push_back(kept("O", {"B", "h", "N", dv}, k.context));
    list.push_back(kept("concat", {"B", "N", concat}, k.concat));
    return list;
}

std::uint64_t kept_bytes(const std::vector<KeptTensor>& kept) {
    std::uint64_t total = 0;
    for (const KeptTensor& t : kept) total = checked_sum({total, t.bytes}, "the kept tensors");
    return total;
}

}  // namespace mha
