// libFuzzer target: the whole run setup, options and files together (see run_setup.h).
// A crash, a sanitizer report, a leak, a timeout or running out of memory is a finding;
// an mha::Error is the expected way to refuse.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "run_setup.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    mha::fuzz::run_setup(std::string_view(reinterpret_cast<const char*>(data), size));
    return 0;
}
