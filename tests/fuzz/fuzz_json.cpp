// libFuzzer target: arbitrary bytes as JSON (config.json, a safetensors header, an index),
// every value then read as each type. Only mha::Error may come out.

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "io/json.h"

namespace {

// Each value read as what it is, numbers as double, integer and size, so that the readers
// of every type see the fuzzer's values.
void read_all(const mha::json::Value& value, const mha::json::Where& where) {
    using mha::json::Kind;
    try {
        if (value.kind == Kind::number) {
            mha::json::as_double(value, where);
            mha::json::as_size(value, where);
        }
    } catch (const mha::Error&) {
    }
    for (std::size_t i = 0; i < value.items.size(); ++i) read_all(value.items[i], where.at(i));
    for (const auto& member : value.members) read_all(member.second, where.at(member.first));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    try {
        mha::json::parse_bytes(text);
        read_all(mha::json::parse(text, "fuzz.json"), {"fuzz.json", ""});
    } catch (const mha::Error&) {
    }
    return 0;
}
