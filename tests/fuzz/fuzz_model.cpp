// libFuzzer target: arbitrary bytes as a character model's .npz (examples/models/README.md),
// then a short text through the model it describes.

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "core/forms/model.h"
#include "core/pass/step.h"
#include "io/model_file.h"
#include "io/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    try {
        const std::string bytes(reinterpret_cast<const char*>(data), size);
        const mha::Model model = mha::model_from_arrays(mha::npy::parse_npz(bytes, "fuzz.npz"),
                                                        "fuzz.npz");
        const mha::ModelText text = mha::encode_text("in the", model);
        mha::NullTracer quiet;
        mha::forward_model(model, text.tokens, 0, 1, quiet);
    } catch (const mha::Error&) {
    }
    return 0;
}
