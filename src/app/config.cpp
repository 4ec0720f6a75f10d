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
    if (c.shapes_only && !(c.weights_path.empty() && c.input_path.empty() &&
                           c.mask_path.empty() && c.key_padding_mask_path.empty() &&
                           c.save_path.empty() && !c.values)) {
        throw Error("--shapes-only traces sizes without any numbers; it cannot be combined "
                    "with --weights, --input, --mask, --key-padding-mask, --save or --values");
    }
    if (c.mask_means && c.mask_path.empty()) {
        throw Error("--mask-means says how to read --mask, but no --mask was given");
    }
}

}  // namespace mha
