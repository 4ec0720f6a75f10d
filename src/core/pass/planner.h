#pragma once
// The planner the plan's files share (plan.cpp: the forward; plan_backward.cpp: the backward):
// the steps planned so far, made only by Planner::add, and the words expressions share.

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "core/pass/plan.h"

namespace mha {

using Dims = std::vector<std::string>;

// The product of the factors, an mha::Error past 64 bits.
std::uint64_t macs_of(std::initializer_list<std::uint64_t> factors);

// The steps planned so far.
class Planner {
public:
    explicit Planner(const PassSpec& pass) : spec(pass), s(pass.sizes) {}

    Step& add(StepKind kind, int number, std::string name, std::string tensor,
              std::string expression, Dims dims, const Layout& layout, std::uint64_t macs = 0);

    // The same, for a step that yields Q, K, V or the fused qkv (or their gradients).
    Step& add(Operand operand, StepKind kind, int number, std::string name, std::string tensor,
              std::string expression, Dims dims, const Layout& layout, std::uint64_t macs = 0);

    const PassSpec& spec;
    const Sizes& s;
    bool backward = false;  // the steps added now are the backward's
    std::vector<Step> steps;
};

// " + b_q": the bias term of a projection's expression, empty without a bias.
std::string bias_suffix(bool bias, const std::string& name);

// " / sqrt(d_k)" (or " / sqrt(S)") when step 7 scales, empty otherwise.
std::string scale_suffix(const PassSpec& spec);

// The name of Q's and the concat's width: d_model, or h·d_k when the heads are wider.
std::string q_width_name(const Sizes& s);

// The name of each head's value width: d_k, unless the values are narrower or wider (MLA).
std::string v_dim_name(const Sizes& s);

// The name of the context's and the concat's width h·d_v: as Q's when d_v = d_k.
std::string concat_width_name(const Sizes& s);

// The name of the query input: x when one tensor plays query, key and value.
std::string query_name(const PassSpec& spec);

// The block's and the model's tensors: (B, N, d_model), one row of features per token.
const Dims model_dims = {"B", "N", "d_model"};
const Dims hidden_dims = {"B", "N", "d_ff"};  // the block's feed-forward hidden layer

// (B, N, d_model), contiguous.
Layout model_layout(const Sizes& s);

// (B, N, d_ff), contiguous: the block's hidden layer (spec.block set).
Layout hidden_layout(const Planner& p);

// The multiply-adds of one of the block's linear layers: B·N·d_ff·d_model.
std::uint64_t ffn_macs(const Planner& p);

// The backward's steps of a Packed or FusedQkv pass on the standard path, after the forward's
// (core/pass/plan_backward.cpp).
void plan_backward(Planner& p);

// The block's backward steps (core/pass/plan_block_backward.cpp): the head, from the block's
// output back to attention's output, before plan_backward's; the tail, from attention's input
// back to x, after them.
void plan_block_backward_head(Planner& p);
void plan_block_backward_tail(Planner& p);

// The model's backward steps after its forward (core/pass/plan_block_backward.cpp): the
// cross-entropy's dlogits, the head, the final norm, each layer in reverse (the traced one in
// full, the others as one step each), the embedding tables.
void plan_model_backward(Planner& p, const ModelSpec& spec);

}  // namespace mha
