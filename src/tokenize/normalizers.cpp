// The normalizers of tokenizer.json that the Llama, Mistral, Qwen and Gemma families use.

#include "tokenize/normalizers.h"

#include "tokenize/nfc.h"

#include <algorithm>
#include <utility>

namespace mha::tokenizers {

namespace {

// The prefix's bytes come from the text's first byte, as Hugging Face aligns them.
NormalizedText prepended(const std::string& prefix, const NormalizedText& text) {
    if (text.text.empty()) return text;
    NormalizedText out{prefix + text.text, {}};
    out.source.reserve(out.text.size() + 1);
    out.source.insert(out.source.end(), prefix.size(), text.source_of(0));
    for (std::size_t i = 0; i <= text.text.size(); ++i) out.source.push_back(text.source_of(i));
    return out;
}

// Every occurrence of pattern, left to right, replaced by content, whose bytes come from where
// the occurrence began.
NormalizedText replaced(const std::string& pattern, const std::string& content,
                        const NormalizedText& text) {
    if (pattern.empty()) return text;
    NormalizedText out;
    out.text.reserve(text.text.size());
    out.source.reserve(text.text.size() + 1);
    for (std::size_t at = 0;;) {
        const std::size_t found = std::min(text.text.find(pattern, at), text.text.size());
        out.text.append(text.text, at, found - at);
        for (std::size_t i = at; i < found; ++i) out.source.push_back(text.source_of(i));
        if (found == text.text.size()) break;
        out.text += content;
        out.source.insert(out.source.end(), content.size(), text.source_of(found));
        at = found + pattern.size();
    }
    out.source.push_back(text.source_of(text.text.size()));
    return out;
}

// NFC through code points; text below U+0300 (no byte from 0xCC on) is in NFC already: it has
// no combining mark, and nothing composes with its characters.
NormalizedText composed(const NormalizedText& text) {
    const bool below = std::all_of(text.text.begin(), text.text.end(),
                                   [](char c) { return static_cast<unsigned char>(c) < 0xCC; });
    if (below) return text;
    const AlignedText aligned = aligned_from(text);
    const unicode::Composed composed = unicode::nfc(aligned.codes);
    AlignedText out;
    out.codes = composed.codes;
    out.spans.reserve(composed.codes.size());
    for (std::size_t i = 0; i < composed.codes.size(); ++i) {
        const std::size_t source = composed.sources[i];
        const std::size_t next =
            i + 1 < composed.sources.size() ? composed.sources[i + 1] : aligned.codes.size();
        // a composite covers the code points from its starter to the next output's source
        out.spans.push_back(span_of(aligned, source, std::max(next, source + 1)));
    }
    return normalized_from(out);
}

std::string quoted(const std::vector<std::uint32_t>& codes) { return "\"" + utf8_of(codes) + "\""; }

}  // namespace

NormalizedText normalize(const NormalizerStep& step, const NormalizedText& text) {
    switch (step.kind) {
        case NormalizerStep::Kind::prepend:
            return prepended(utf8_of(step.content), text);
        case NormalizerStep::Kind::replace:
            return replaced(utf8_of(step.pattern), utf8_of(step.content), text);
        case NormalizerStep::Kind::nfc:
            return composed(text);
    }
    return text;
}

std::string describe(const NormalizerStep& step) {
    switch (step.kind) {
        case NormalizerStep::Kind::prepend:
            return "Prepend(" + quoted(step.content) + ")";
        case NormalizerStep::Kind::replace:
            return "Replace(" + quoted(step.pattern) + " -> " + quoted(step.content) + ")";
        case NormalizerStep::Kind::nfc:
            return "NFC";
    }
    return "";
}

JsonNormalizer::JsonNormalizer(std::vector<NormalizerStep> steps) : steps_(std::move(steps)) {}

NormalizedText JsonNormalizer::normalize(NormalizedText text, TokenizeTrace* trace) const {
    for (const NormalizerStep& step : steps_) {
        text = tokenizers::normalize(step, text);
        if (trace) trace->normalizers.push_back({describe(step), text.text});
    }
    return text;
}

}  // namespace mha::tokenizers
