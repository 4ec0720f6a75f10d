// The normalizers of tokenizer.json that the Llama, Mistral, Qwen and Gemma families use.

#include "tokenize/normalizers.h"

#include "tokenize/nfc.h"

#include <algorithm>
#include <utility>

namespace mha::tokenizers {

namespace {

// The prefix takes the span of the first code point, as Hugging Face aligns it.
void prepend(const std::vector<std::uint32_t>& prefix, AlignedText& text) {
    if (text.codes.empty()) return;
    const Span first = text.spans.front();
    text.codes.insert(text.codes.begin(), prefix.begin(), prefix.end());
    text.spans.insert(text.spans.begin(), prefix.size(), first);
}

// Every occurrence of pattern, left to right, replaced by content spanning what it replaced.
void replace(const std::vector<std::uint32_t>& pattern, const std::vector<std::uint32_t>& content,
             AlignedText& text) {
    if (pattern.empty()) return;
    AlignedText out;
    out.codes.reserve(text.codes.size());
    out.spans.reserve(text.codes.size());
    for (std::size_t i = 0; i < text.codes.size();) {
        const bool found = i + pattern.size() <= text.codes.size() &&
                           std::equal(pattern.begin(), pattern.end(), text.codes.begin() + i);
        if (!found) {
            out.codes.push_back(text.codes[i]);
            out.spans.push_back(text.spans[i]);
            ++i;
            continue;
        }
        const Span span = span_of(text, i, i + pattern.size());
        out.codes.insert(out.codes.end(), content.begin(), content.end());
        out.spans.insert(out.spans.end(), content.size(), span);
        i += pattern.size();
    }
    text = std::move(out);
}

void compose(AlignedText& text) {
    const unicode::Composed composed = unicode::nfc(text.codes);
    AlignedText out;
    out.codes = composed.codes;
    out.spans.reserve(composed.codes.size());
    for (std::size_t i = 0; i < composed.codes.size(); ++i) {
        const std::size_t source = composed.sources[i];
        const std::size_t next =
            i + 1 < composed.sources.size() ? composed.sources[i + 1] : text.codes.size();
        // a composite covers the code points from its starter to the next output's source
        out.spans.push_back(span_of(text, source, std::max(next, source + 1)));
    }
    text = std::move(out);
}

std::string quoted(const std::vector<std::uint32_t>& codes) { return "\"" + utf8_of(codes) + "\""; }

}  // namespace

void normalize(const NormalizerStep& step, AlignedText& text) {
    switch (step.kind) {
        case NormalizerStep::Kind::prepend:
            prepend(step.content, text);
            return;
        case NormalizerStep::Kind::replace:
            replace(step.pattern, step.content, text);
            return;
        case NormalizerStep::Kind::nfc:
            compose(text);
            return;
    }
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
    AlignedText aligned = aligned_from(text);
    for (const NormalizerStep& step : steps_) {
        tokenizers::normalize(step, aligned);
        if (trace) trace->normalizers.push_back({describe(step), utf8_of(aligned.codes)});
    }
    return normalized_from(aligned);
}

}  // namespace mha::tokenizers
