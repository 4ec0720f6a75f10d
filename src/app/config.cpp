// The rules between options: which combinations make sense.

#include "app/config.h"

#include "core/error.h"

namespace mha {

void validate(const Config& c) {
    if (c.key_path.empty() != c.value_path.empty()) {
        throw Error("--key and --value go together: give both for cross-attention, or neither");
    }
    if (!c.key_path.empty() && c.input_path.empty()) {
        throw Error("--key and --value need --input for the queries");
    }
    if (!c.weights_path.empty() && (!c.bias || c.random_bias)) {
        throw Error(std::string(c.bias ? "--random-bias" : "--no-bias") +
                    " applies to seeded weights; with --weights the state dict decides the bias");
    }
    if (!c.bias && c.random_bias) {
        throw Error("--no-bias and --random-bias contradict each other; choose one");
    }
    if (c.attention == AttentionPath::Streaming && !c.save_path.empty()) {
        throw Error("--save writes the attention weights, which --attention streaming never "
                    "stores; use --attention standard or auto");
    }
    if (c.mask_means && c.mask_path.empty()) {
        throw Error("--mask-means says how to read --mask, but no --mask was given");
    }
}

}  // namespace mha
