#pragma once
// What training one layer costs, from the plan alone: the tensors the forward keeps for the
// backward (the inputs and Kept's, core/pass/attention.h, with P on the standard path or the
// row log-sum-exp on the streaming one) and the backward's multiply-adds beside the forward's.

#include <cstdint>
#include <string>
#include <vector>

#include "core/pass/plan.h"

namespace mha {

// One tensor the backward reads from the forward.
struct KeptTensor {
    std::string name;               // "x", "Q", "P", "lse", ...; Q_raw, K_raw: before QK-norm
    std::vector<std::string> dims;  // a name from the shape legend for every dimension
    Shape shape;                    // one size per name in dims
    std::uint64_t bytes = 0;        // float32: 4 per element
};

// The tensors a backward of `spec` reads from its forward, in the order the forward makes
// them: the inputs (x, or x_q, x_k, x_v), Q and K before QK-norm (with --qk-norm), Q, K, V
// (B, h, N, d_k), (B, G, M, d_k), (B, G, M, d_v), the weights P (B, h, N, M) on the standard
// path or their row log-sum-exp lse (B, h, N) on the streaming one, the context O
// (B, h, N, d_v) and the concat (B, N, h·d_v). Throws mha::Error past 64 bits.
std::vector<KeptTensor> planned_kept(const PassSpec& spec);

// The bytes of all of them (throws mha::Error past 64 bits).
std::uint64_t kept_bytes(const std::vector<KeptTensor>& kept);

// How the forward's and the backward's multiply-adds of a plan split (Step::backward).
struct MacSplit {
    std::uint64_t forward = 0, backward = 0;
};

// The planned steps' multiply-adds, forward and backward apart (throws past 64 bits).
MacSplit split_macs(const std::vector<Step>& steps);

}  // namespace mha
