// libFuzzer target: arbitrary bytes as a state dict (.npz) turned into Weights, then checked
// against seeded inputs of the same width as the command line would do; and the same arrays
// read as an MLA state dict, whose sizes are then checked.

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "core/error.h"
#include "core/pass/shape_checks.h"
#include "io/npy.h"
#include "io/weights.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::map<std::string, mha::npy::Array> arrays;
    try {
        arrays =
            mha::npy::parse_npz(std::string(reinterpret_cast<const char*>(data), size), "fuzz.npz");
    } catch (const mha::Error&) {
        return 0;
    }
    try {
        const mha::Weights weights = mha::weights_from_state_dict(arrays, "fuzz.npz");
        const mha::Tensor x_q({1, 1, weights.d_model()});
        const mha::Tensor x_k({1, 1, weights.kdim()});
        const mha::Tensor x_v({1, 1, weights.vdim()});
        mha::check_shapes(weights, mha::Inputs{x_q, x_k, x_v}, mha::Masks{}, 1);
    } catch (const mha::Error&) {
    }
    try {  // the same bytes as an MLA state dict (--form mla) with two heads
        mha::mla_sizes(mha::mla_weights_from_state_dict(arrays, "fuzz.npz", 2), 2);
    } catch (const mha::Error&) {
    }
    return 0;
}
