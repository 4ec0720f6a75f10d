// libFuzzer target: arbitrary bytes as a state dict (.npz) turned into Weights, then checked
// against seeded inputs of the same width as the command line would do.

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "io/npy.h"
#include "io/weights.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    try {
        const mha::Weights weights = mha::weights_from_state_dict(
            mha::npy::parse_npz(std::string(reinterpret_cast<const char*>(data), size),
                                "fuzz.npz"),
            "fuzz.npz");
        const mha::Tensor x_q({1, 1, weights.d_model()});
        const mha::Tensor x_k({1, 1, weights.kdim()});
        const mha::Tensor x_v({1, 1, weights.vdim()});
        mha::check_shapes(weights, mha::Inputs{x_q, x_k, x_v}, mha::Masks{}, 1);
    } catch (const mha::Error&) {
    }
    return 0;
}
