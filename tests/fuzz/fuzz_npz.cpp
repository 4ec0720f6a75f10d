// libFuzzer target: arbitrary bytes as an .npz file (zip container and every .npy inside).

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "io/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    try {
        mha::npy::parse_npz(std::string(reinterpret_cast<const char*>(data), size), "fuzz.npz");
    } catch (const mha::Error&) {
    }
    return 0;
}
