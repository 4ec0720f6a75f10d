// The model's parameters in state-dict order, gathered from and scattered to its tensors.

#include "core/train/parameters.h"

#include <algorithm>

namespace mha {

namespace {

// A parameter of the given parts, stacked along dim 0; none when the first part is empty.
void add(std::vector<Parameter>& out, std::string name, std::vector<Tensor*> parts) {
    if (parts.front()->empty()) return;
    Shape shape = parts.front()->shape();
    for (std::size_t i = 1; i < parts.size(); ++i) shape[0] += parts[i]->size(0);
    out.push_back({std::move(name), std::move(shape), std::move(parts)});
}

}  // namespace

std::vector<Parameter> model_parameters(Model& m) {
    std::vector<Parameter> out;
    add(out, "token_embedding.weight", {&m.token_embedding});
    add(out, "position_embedding.weight", {&m.position_embedding});
    for (std::size_t l = 0; l < m.layers.size(); ++l) {
        Weights& a = m.layers[l].attention;
        BlockWeights& b = m.layers[l].block;
        const std::string under = "layers." + std::to_string(l) + ".";
        add(out, under + "self_attn.in_proj_weight", {&a.w_q, &a.w_k, &a.w_v});
        add(out, under + "self_attn.in_proj_bias", {&a.b_q, &a.b_k, &a.b_v});
        add(out, under + "self_attn.out_proj.weight", {&a.w_o});
        add(out, under + "self_attn.out_proj.bias", {&a.b_o});
        add(out, under + "norm1.weight", {&b.norm1_weight});
        add(out, under + "norm1.bias", {&b.norm1_bias});
        add(out, under + "norm2.weight", {&b.norm2_weight});
        add(out, under + "norm2.bias", {&b.norm2_bias});
        add(out, under + "linear1.weight", {&b.w_1});
        add(out, under + "linear1.bias", {&b.b_1});
        add(out, under + "linear2.weight", {&b.w_2});
        add(out, under + "linear2.bias", {&b.b_2});
    }
    add(out, "norm.weight", {&m.norm_weight});
    add(out, "norm.bias", {&m.norm_bias});
    add(out, "lm_head.weight", {&m.head_weight});
    add(out, "lm_head.bias", {&m.head_bias});
    return out;
}

Tensor gather_parameter(const Parameter& p) {
    if (p.parts.size() == 1) return p.parts.front()->contiguous();
    std::vector<float> values;
    values.reserve(element_count(p.shape));
    for (const Tensor* part : p.parts) {
        const Tensor t = part->contiguous();
        values.insert(values.end(), t.data(), t.data() + t.numel());
    }
    return Tensor(p.shape, std::move(values));
}

void scatter_parameter(const Parameter& p, const Tensor& values) {
    const float* from = values.data();
    for (Tensor* part : p.parts) {
        if (part->data() == from) return;  // the parameter's own storage: nothing to copy
        const std::size_t n = part->numel();
        if (part->is_contiguous()) {
            std::copy(from, from + n, part->data());
        } else {
            *part = Tensor(part->shape(), std::vector<float>(from, from + n));
        }
        from += n;
    }
}

}  // namespace mha
