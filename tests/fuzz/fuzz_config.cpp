// libFuzzer target: arbitrary bytes as a checkpoint's config.json, mapped onto a model family
// (checkpoint::parse_config), then each layer's RoPE frequencies computed. Only mha::Error may
// come out.

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "core/position/rope.h"
#include "io/checkpoint/config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    try {
        const mha::checkpoint::Config config = mha::checkpoint::parse_config(text, "config.json");
        if (config.rope && config.head_dim <= 4096) {
            for (const mha::checkpoint::LayerConfig& layer : config.layer)
                mha::rope_inv_freq(config.head_dim, layer.rope);
        }
    } catch (const mha::Error&) {
    }
    return 0;
}
