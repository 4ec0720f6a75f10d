// The decoders of tokenizer.json that the Llama, Mistral, Qwen and Gemma families use.

#include "tokenize/decoders.h"

#include "io/printable.h"

#include <cctype>
#include <cstdlib>
#include <utility>

namespace mha::tokenizers {

namespace {

const std::string replacement_character = "\xEF\xBF\xBD";  // U+FFFD

// Bytes as text, each invalid UTF-8 sequence replaced by U+FFFD (Rust's from_utf8_lossy).
std::string lossy_utf8(const std::string& bytes) {
    std::string out;
    for (std::size_t at = 0; at < bytes.size();) {
        const std::size_t length = utf8_length(bytes, at);
        if (length == 0) {
            out += replacement_character;
            ++at;
            continue;
        }
        out.append(bytes, at, length);
        at += length;
    }
    return out;
}

// The byte of a "<0xNN>" token, or -1.
int fallback_byte(const std::string& token) {
    if (token.size() != 6 || token.compare(0, 3, "<0x") != 0 || token[5] != '>') return -1;
    char* end = nullptr;
    const std::string hex = token.substr(3, 2);
    const long value = std::strtol(hex.c_str(), &end, 16);
    return *end == 0 && std::isxdigit(static_cast<unsigned char>(hex[0])) ? static_cast<int>(value)
                                                                          : -1;
}

// Each run of <0xNN> tokens becomes one token, its bytes' UTF-8 text, or one U+FFFD per byte
// when they are not valid UTF-8.
std::vector<std::string> byte_fallback(const std::vector<std::string>& tokens) {
    std::vector<std::string> out;
    std::string bytes;
    std::size_t count = 0;
    const auto flush = [&] {
        if (count == 0) return;
        if (lossy_utf8(bytes) == bytes)
            out.push_back(bytes);
        else
            out.insert(out.end(), count, replacement_character);
        bytes.clear();
        count = 0;
    };
    for (const std::string& token : tokens) {
        const int byte = fallback_byte(token);
        if (byte >= 0) {
            bytes.push_back(static_cast<char>(byte));
            ++count;
            continue;
        }
        flush();
        out.push_back(token);
    }
    flush();
    return out;
}

std::string replace_all(const std::string& text, const std::string& pattern,
                        const std::string& content) {
    if (pattern.empty()) return text;
    std::string out;
    for (std::size_t at = 0;;) {
        const std::size_t found = text.find(pattern, at);
        if (found == std::string::npos) return out + text.substr(at);
        out += text.substr(at, found - at) + content;
        at = found + pattern.size();
    }
}

std::string strip(const std::string& token, const std::string& character, std::size_t start,
                  std::size_t stop) {
    std::size_t first = 0, end = token.size();
    for (std::size_t n = 0; n < start && token.compare(first, character.size(), character) == 0;
         ++n)
        first += character.size();
    for (std::size_t n = 0; n < stop && end >= first + character.size() &&
                            token.compare(end - character.size(), character.size(), character) == 0;
         ++n)
        end -= character.size();
    return token.substr(first, end - first);
}

// GPT-2's byte symbols back to bytes, the whole as one text (Hugging Face's, lossy).
std::vector<std::string> byte_level(const std::vector<std::string>& tokens) {
    return {lossy_utf8(ByteLevelDecoder().decode(tokens))};
}

std::vector<std::string> metaspace(const DecoderStep& step, std::vector<std::string> tokens) {
    const std::string replacement = utf8_encode(step.replacement);
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        const bool drop = i == 0 && step.prepend_scheme != PrependScheme::never;
        tokens[i] = replace_all(tokens[i], replacement, drop ? "" : " ");
    }
    return tokens;
}

}  // namespace

std::vector<std::string> decode_step(const DecoderStep& step, std::vector<std::string> tokens) {
    switch (step.kind) {
        case DecoderStep::Kind::byte_level:
            return byte_level(tokens);
        case DecoderStep::Kind::replace:
            for (std::string& token : tokens)
                token = replace_all(token, step.pattern, step.content);
            return tokens;
        case DecoderStep::Kind::byte_fallback:
            return byte_fallback(tokens);
        case DecoderStep::Kind::fuse: {
            std::string all;
            for (const std::string& token : tokens) all += token;
            return {all};
        }
        case DecoderStep::Kind::strip:
            for (std::string& token : tokens)
                token = strip(token, utf8_encode(step.strip_code), step.start, step.stop);
            return tokens;
        case DecoderStep::Kind::metaspace:
            return metaspace(step, std::move(tokens));
    }
    return tokens;
}

JsonDecoder::JsonDecoder(std::vector<DecoderStep> steps) : steps_(std::move(steps)) {}

std::string JsonDecoder::decode(const std::vector<std::string>& tokens) const {
    std::vector<std::string> strings = tokens;
    for (const DecoderStep& step : steps_) strings = decode_step(step, std::move(strings));
    std::string text;
    for (const std::string& s : strings) text += s;
    return text;
}

}  // namespace mha::tokenizers
