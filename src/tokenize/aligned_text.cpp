// Aligned text: code points with the input bytes each came from.

#include "tokenize/aligned_text.h"

#include "io/printable.h"
#include "tokenize/utf8.h"

#include <algorithm>

namespace mha::tokenizers {

std::vector<std::uint32_t> code_points(std::string_view text) {
    std::vector<std::uint32_t> codes;
    codes.reserve(text.size());
    for (std::size_t at = 0; at < text.size();) {
        const CodePoint c = code_point_at(text, at);
        codes.push_back(c.code);
        at += c.length;
    }
    return codes;
}

std::string utf8_of(const std::vector<std::uint32_t>& codes) {
    std::string out;
    out.reserve(codes.size());
    for (const std::uint32_t code : codes) {
        if (code < 0x80)
            out.push_back(static_cast<char>(code));
        else
            out += utf8_encode(code);
    }
    return out;
}

Span span_of(const AlignedText& text, std::size_t first, std::size_t end) {
    if (first >= end) return {};
    Span span = text.spans[first];
    for (std::size_t i = first + 1; i < end; ++i) {  // NFC may reorder marks
        span.begin = std::min(span.begin, text.spans[i].begin);
        span.end = std::max(span.end, text.spans[i].end);
    }
    return span;
}

AlignedText slice(const AlignedText& text, std::size_t first, std::size_t end) {
    AlignedText out;
    out.codes.assign(text.codes.begin() + first, text.codes.begin() + end);
    out.spans.assign(text.spans.begin() + first, text.spans.begin() + end);
    return out;
}

AlignedText aligned_from(const NormalizedText& text) {
    AlignedText out;
    out.codes.reserve(text.text.size());
    out.spans.reserve(text.text.size());
    for (std::size_t at = 0; at < text.text.size();) {
        const CodePoint c = code_point_at(text.text, at);
        out.codes.push_back(c.code);
        const std::size_t from = text.source_of(at);
        out.spans.push_back({from, std::max(from, text.source_of(at + c.length))});
        at += c.length;
    }
    return out;
}

NormalizedText normalized_from(const AlignedText& text) {
    NormalizedText out;
    for (std::size_t i = 0; i < text.codes.size(); ++i) {
        const std::size_t before = out.text.size();
        out.text += utf8_of({text.codes[i]});
        out.source.insert(out.source.end(), out.text.size() - before, text.spans[i].begin);
    }
    out.source.push_back(text.spans.empty() ? 0 : text.spans.back().end);
    return out;
}

PreToken pre_token_from(const AlignedText& text, const char* branch) {
    PreToken out{utf8_of(text.codes), {}, branch};
    out.char_source.reserve(text.codes.size() + 1);
    for (const Span& span : text.spans) out.char_source.push_back(span.begin);
    out.char_source.push_back(text.spans.empty() ? 0 : text.spans.back().end);
    return out;
}

}  // namespace mha::tokenizers
