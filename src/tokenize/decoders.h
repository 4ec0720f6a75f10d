#pragma once
// A tokenizer.json's decoder, for the round trip from ids to text: ByteLevel, Replace,
// ByteFallback, Fuse, Strip, Metaspace, and a Sequence of these, flattened into the list of
// steps. Each step rewrites the list of token strings, as Hugging Face's decode_chain does.

#include "tokenize/pre_tokenizers.h"
#include "tokenize/tokenizer.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mha::tokenizers {

struct DecoderStep {
    enum class Kind { byte_level, replace, byte_fallback, fuse, strip, metaspace };
    Kind kind = Kind::byte_level;
    std::string pattern, content;        // replace: every pattern becomes content
    std::uint32_t strip_code = ' ';      // strip: the character, at most start from the front and
    std::size_t start = 0, stop = 0;     // stop from the back of each token
    std::uint32_t replacement = 0x2581;  // metaspace
    PrependScheme prepend_scheme = PrependScheme::always;
};

// The tokens' strings after the step.
std::vector<std::string> decode_step(const DecoderStep& step, std::vector<std::string> tokens);

// The decoder stage: the steps in order, the strings left concatenated.
class JsonDecoder : public Decoder {
public:
    explicit JsonDecoder(std::vector<DecoderStep> steps);
    std::string decode(const std::vector<std::string>& tokens) const override;

private:
    std::vector<DecoderStep> steps_;
};

}  // namespace mha::tokenizers
