#pragma once
// The character model's trainable parameters, named and ordered as its file names them
// (io/model_file.h's model_arrays: train.py's state-dict order), each made of the model's
// tensors it stacks: in_proj_weight is W_q, W_k, W_v along dim 0, in_proj_bias b_q, b_k, b_v.

#include <string>
#include <vector>

#include "core/forms/model.h"

namespace mha {

struct Parameter {
    std::string name;            // e.g. "layers.0.self_attn.in_proj_weight"
    Shape shape;                 // the state dict's shape: parts stacked along dim 0
    std::vector<Tensor*> parts;  // the model's tensors, in the order they are stacked
};

// Every non-empty parameter of `model`, in train.py's state-dict order.
std::vector<Parameter> model_parameters(Model& model);

// The parameter's values as one contiguous tensor of its shape (a copy when it has parts).
Tensor gather_parameter(const Parameter& parameter);

// Writes `values` (the parameter's shape, contiguous) back into its parts.
void scatter_parameter(const Parameter& parameter, const Tensor& values);

}  // namespace mha
