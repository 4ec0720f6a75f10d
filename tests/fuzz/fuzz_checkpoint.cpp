// libFuzzer target: arbitrary bytes as mha train's checkpoint (--resume): the model's arrays,
// AdamW's moments and every train.* value, each validated before it trains.

#include <cstddef>
#include <cstdint>
#include <string>

#include "app/train/train_checkpoint.h"
#include "core/error.h"
#include "io/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    try {
        const std::string bytes(reinterpret_cast<const char*>(data), size);
        mha::checkpoint_from_arrays(mha::npy::parse_npz(bytes, "fuzz.npz"), "fuzz.npz");
    } catch (const mha::Error&) {
    }
    return 0;
}
