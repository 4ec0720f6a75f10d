// What training costs: one layer's kept tensors, read off its forward, and a step's
// multiply-adds and a model run's peak bytes, off dry runs.

#include "core/backward/training_costs.h"

#include "core/backward/block_backward.h"
#include "core/backward/model_backward.h"
#include "core/checked.h"
#include "core/tensor/workspace.h"

namespace mha {

namespace {

KeptTensor kept(const std::string& name, std::vector<std::string> dims, const Tensor& t) {
    return {name, std::move(dims), t.shape(), float_bytes(t.shape(), "the kept tensors")};
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

std::uint64_t training_step_macs(const Model& dry, std::size_t context, std::size_t rows) {
    const std::string what = "the multiply-adds of a training step";
    const std::vector<std::size_t> tokens(context, 0);
    Tally whole;
    model_forward_backward(dry, tokens, tokens, 0, 1, whole);
    std::uint64_t row = whole.total_macs();
    for (std::size_t l = 1; l < dry.layers.size(); ++l) {
        const ModelLayer& layer = dry.layers[l];
        Workspace workspace = Workspace::dry();
        const Tensor x = Tensor::shape_only({1, context, dry.d_model()});
        Tally one;
        block_forward_backward(layer.attention, layer.block, BlockKind::Pre, {x, x, x},
                               layer_masks(layer), layer_options(layer, 1, &workspace), x, one);
        row = checked_sum({row, one.total_macs()}, what);
    }
    return checked_product({row, rows}, what);
}

std::uint64_t forward_peak_bytes(const Model& dry, const std::vector<std::size_t>& tokens,
                                 bool keep_hidden) {
    Workspace workspace = Workspace::dry_blocks();
    ModelPass pass;
    pass.keep_hidden = keep_hidden;
    pass.workspace = &workspace;
    NullTracer quiet;
    forward_model(dry, tokens, 0, 1, quiet, pass);
    return workspace.peak_bytes();
}

std::uint64_t forward_backward_peak_bytes(const Model& dry, const std::vector<std::size_t>& tokens,
                                          const std::vector<std::size_t>& targets,
                                          std::size_t rows) {
    Workspace workspace = Workspace::dry_blocks();
    model_forward_backward(dry, tokens, targets, rows, 1, &workspace);
    return workspace.peak_bytes();
}

}  // namespace mha
