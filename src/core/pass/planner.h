#pragma once
// The planner the plan's files share (plan.cpp: the forward; plan_backward.cpp: the backward):
// the steps planned so far, made only by Planner::add, and the words expressions share.

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "core/pass/describe.h"
#include "core/pass/plan.h"

namespace mha {

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

// " / sqrt(d_k)" (or " / sqrt(S)") when step 7 scales, empty otherwise.
std::string scale_suffix(const PassSpec& spec);

// The name of the query input: x when one tensor plays query, key and value.
std::string query_name(const PassSpec& spec);

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
