// libFuzzer target: arbitrary bytes as an .npy file. Only mha::Error may come out.

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "io/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    try {
        mha::npy::parse_npy(std::string(reinterpret_cast<const char*>(data), size), "fuzz.npy");
    } catch (const mha::Error&) {
    }
    return 0;
}
