#pragma once
// The words, counts and facts that steps' descriptions share: each form describes its steps
// where it computes them (trace.show), with these.

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "core/ops/masks.h"
#include "core/pass/step.h"
#include "core/position/rope.h"
#include "core/sizes.h"
#include "core/tensor/tensor.h"

namespace mha {

// A step's description: what it is, its number, name, tensor, PyTorch expression, a name for
// every dimension and its multiply-adds. The trace adds the tensor's layout and values.
Step described(StepKind kind, int number, std::string name, std::string tensor,
               std::string expression, Dims dims, std::uint64_t macs = 0);

// The same, for a step that yields Q, K, V or the fused qkv (or their gradients).
Step described(Operand operand, StepKind kind, int number, std::string name, std::string tensor,
               std::string expression, Dims dims, std::uint64_t macs = 0);

// The product of the factors, an mha::Error past 64 bits.
std::uint64_t macs_of(std::initializer_list<std::uint64_t> factors);

// The bytes of a copy of `t`'s elements when it is not contiguous, else 0.
std::uint64_t copy_bytes(const Tensor& t);

// " + b_q": the bias term of a projection's expression, empty without a bias.
std::string bias_suffix(bool bias, const std::string& name);

// " / sqrt(d_k)" (or " / sqrt(S)" with a scale base S > 0) when step 7 scales, else empty.
std::string scale_suffix(bool scale, double scale_base);

// The name of Q's and the concat's width: d_model, or h·d_k when the heads are wider.
std::string q_width_name(const Sizes& s);

// The name of each head's value width: d_k, unless the values are narrower or wider (MLA).
std::string v_dim_name(const Sizes& s);

// The name of the context's and the concat's width h·d_v: as Q's when d_v = d_k.
std::string concat_width_name(const Sizes& s);

// The name of the query input: x when one tensor plays query, key and value.
std::string query_name(bool self_attention);

// The block's and the model's tensors: (B, N, d_model), one row of features per token.
const Dims model_dims = {"B", "N", "d_model"};
const Dims hidden_dims = {"B", "N", "d_ff"};  // the block's feed-forward hidden layer

constexpr std::size_t max_grid = 16;  // the mask grid is drawn only up to 16 x 16

// The keys each of n queries may see among m under the causal mask and the window.
std::vector<std::vector<bool>> allowed_grid(const Masks& masks, std::size_t n, std::size_t m);

// The window W with its sinks over `length` positions, and the K (d_k) and V (d_v) a cache
// keeps for it.
WindowFacts window_facts(const Masks& masks, const Sizes& s, std::size_t length);

// What step 8 applies to n queries and m keys, and what follows from it: every head's ALiBi
// slope, the keys the window keeps.
void mask_facts(const Masks& masks, const Sizes& s, std::size_t n, std::size_t m,
                StepFacts& facts);

// Token t (0-based) of the decode form, and the K and V cached once it is in.
TokenFacts token_facts(const Sizes& s, std::size_t t);

// RoPE's pairs and base, and the angles of the first pairs at positions 0, 1 and M-1.
RopeFacts rope_facts(const Rope& rope, const Sizes& s);

}  // namespace mha

namespace mha {

// Step 14, output = concat @ W_o.T (+ b_o): (B, N, h·d_v) -> (B, N, d_model).
Step output_described(const Sizes& s, bool bias);

// "t = t * gate" (element-wise), or head-wise "t = (t.view(B, N, h, d_k) * gate.unsqueeze(-1))
// .view(B, N, width)": the gate's product with the concat (t "concat") or its gradient ("dconcat").
std::string gated_expression(const std::string& t, bool headwise, const std::string& width);

}  // namespace mha
