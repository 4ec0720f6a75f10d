#pragma once
// A PyTorch state dict saved as .npz -> Weights. Understands nn.MultiheadAttention's
// names and the names from-scratch modules use; anything else is an error that
// names the array and the shape expected.

#include "core/attention.h"
#include "io/npy.h"

#include <cstdint>
#include <map>
#include <string>

namespace mha {

// `source` names the file in error messages.
Weights weights_from_state_dict(const std::map<std::string, npy::Array>& arrays,
                                const std::string& source);

// Refuses a file whose arrays need more than the ledger has left to load.
Weights load_weights(const std::string& path, const Ledger& ledger);

}  // namespace mha
