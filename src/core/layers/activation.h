#pragma once
// The feed-forward activations real checkpoints use besides the exact GELU (core/layers/gelu.h):
// GELU's tanh form (GPT-2's gelu_new, Gemma's gelu_pytorch_tanh) and SiLU, alone or gating a
// second projection (SwiGLU, GeGLU). Float32 on vector lanes, both as u σ(t) with σ from
// e^(−|t|) (core/kernels/vector_exp.h): relative error within 4e-7 · (1 + |t|) of u σ(t) in
// double (1.3e-7 measured), 0 where σ(t) < e^(−87) (tests/test_activation.cpp). The tensor
// forms return shape-only results on dry operands (a dry run).

#include <cstddef>

#include "core/tensor/tensor.h"
#include "core/tensor/workspace.h"

namespace mha {

// The element-wise functions a feed-forward applies to its hidden layer.
enum class Activation {
    Gelu,      // u Φ(u), the exact erf form (nn.GELU())
    GeluTanh,  // u/2 (1 + tanh(sqrt(2/π) (u + 0.044715 u³)))
    Silu,      // u σ(u) = u / (1 + e^(−u))
};

// "F.gelu", "gelu_tanh", "F.silu": the activation as the trace writes it.
const char* activation_name(Activation activation);

// act(u), element-wise, u (...) contiguous; split over `threads`, y from the workspace when
// there is one.
Tensor activate(const Tensor& u, Activation activation, std::size_t threads = 1,
                Workspace* workspace = nullptr);

// act(gate) * up, element-wise: the gated feed-forward's hidden layer (SwiGLU with Silu,
// GeGLU with GeluTanh). gate and up (..., d_ff) of one shape, contiguous.
Tensor activate_gated(const Tensor& gate, const Tensor& up, Activation activation,
                      std::size_t threads = 1, Workspace* workspace = nullptr);

}  // namespace mha
