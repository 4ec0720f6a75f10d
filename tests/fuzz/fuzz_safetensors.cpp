// libFuzzer target: arbitrary bytes as a .safetensors file: the header's length, its JSON,
// the dtype, shape and offset checks, then every tensor widened to float32. Only mha::Error
// may come out.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    try {
        const mha::Ledger ledger(std::uint64_t(64) << 20);
        for (const mha::safetensors::Entry& entry :
             mha::safetensors::parse_header(bytes, bytes.size(), "fuzz.safetensors", ledger)) {
            // the checks keep [begin, end) inside the bytes and a whole number of elements
            const std::size_t count = (entry.end - entry.begin) / item_size(entry.dtype);
            std::vector<float> values(count);
            mha::safetensors::widen(entry.dtype, bytes.data() + entry.begin, count, values.data(),
                                    entry.name, 0);
        }
    } catch (const mha::Error&) {
    }
    return 0;
}
