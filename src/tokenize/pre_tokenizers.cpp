// The pre-tokenizers of tokenizer.json that the Llama, Mistral, Qwen and Gemma families use.

#include "tokenize/pre_tokenizers.h"

#include "tokenize/byte_level.h"
#include "tokenize/utf8.h"

#include <algorithm>
#include <utility>

namespace mha::tokenizers {

namespace {

// A stretch [first, end) of a piece's code points, and whether the pattern matched it.
struct Stretch {
    std::size_t first, end;
    bool match;
    const char* rule;
};

// The matches of a pattern we implement, and the gaps between them, in code points.
std::vector<Stretch> pattern_stretches(Pattern pattern, const AlignedText& text) {
    const std::string utf8 = utf8_of(text.codes);
    std::vector<std::size_t> index(utf8.size() + 1);  // byte -> code point
    for (std::size_t at = 0, i = 0; at < utf8.size(); ++i) {
        const std::size_t length = code_point_at(utf8, at).length;
        for (std::size_t k = 0; k < length; ++k) index[at + k] = i;
        at += length;
    }
    index[utf8.size()] = text.codes.size();
    std::vector<Stretch> out;
    std::size_t at = 0;
    for (const PatternPiece& found : match_pattern(pattern, utf8)) {
        const std::size_t first = index[found.begin], end = index[found.end];
        if (first > at) out.push_back({at, first, false, "(no branch)"});
        out.push_back({first, end, true, found.branch});
        at = end;
    }
    if (at < text.codes.size()) out.push_back({at, text.codes.size(), false, "(no branch)"});
    return out;
}

// The occurrences of a literal, left to right without overlap, and the gaps between them.
std::vector<Stretch> literal_stretches(const std::vector<std::uint32_t>& literal,
                                       const AlignedText& text) {
    std::vector<Stretch> out;
    std::size_t at = 0;
    const auto& codes = text.codes;
    for (std::size_t i = 0; !literal.empty() && i + literal.size() <= codes.size();) {
        if (!std::equal(literal.begin(), literal.end(), codes.begin() + i)) {
            ++i;
            continue;
        }
        if (i > at) out.push_back({at, i, false, "between matches"});
        out.push_back({i, i + literal.size(), true, "the string"});
        i += literal.size();
        at = i;
    }
    if (at < codes.size()) out.push_back({at, codes.size(), false, "between matches"});
    return out;
}

// A match joins the stretch before it (or after it) unless that one is a match too.
std::vector<Stretch> merge_matches(std::vector<Stretch> stretches, bool with_previous) {
    if (!with_previous) std::reverse(stretches.begin(), stretches.end());
    std::vector<Stretch> out;
    bool previous_match = false;
    for (const Stretch& s : stretches) {
        if (s.match && !previous_match && !out.empty()) {
            Stretch& last = out.back();
            last.first = std::min(last.first, s.first);
            last.end = std::max(last.end, s.end);
        } else {
            out.push_back({s.first, s.end, false, s.rule});
        }
        previous_match = s.match;
    }
    if (!with_previous) std::reverse(out.begin(), out.end());
    return out;
}

std::vector<Stretch> apply_behavior(std::vector<Stretch> stretches, SplitBehavior behavior) {
    switch (behavior) {
        case SplitBehavior::isolated:
            return stretches;
        case SplitBehavior::removed:
            stretches.erase(std::remove_if(stretches.begin(), stretches.end(),
                                           [](const Stretch& s) { return s.match; }),
                            stretches.end());
            return stretches;
        case SplitBehavior::merged_with_previous:
            return merge_matches(std::move(stretches), true);
        case SplitBehavior::merged_with_next:
            return merge_matches(std::move(stretches), false);
    }
    return stretches;
}

void cut(const Piece& piece, const std::vector<Stretch>& stretches, bool keep_rule,
         std::vector<Piece>& out) {
    for (const Stretch& s : stretches) {
        if (s.end > s.first)
            out.push_back({slice(piece.text, s.first, s.end), keep_rule ? piece.rule : s.rule});
    }
}

// Each code point's UTF-8 bytes as GPT-2's byte symbols; each byte spans its own input byte
// when the code point is the input's as it was, else the code point's span.
AlignedText byte_symbols(const AlignedText& text) {
    AlignedText out;
    for (std::size_t i = 0; i < text.codes.size(); ++i) {
        const std::string bytes = utf8_of({text.codes[i]});
        const Span span = text.spans[i];
        const bool own = span.end - span.begin == bytes.size();
        for (std::size_t k = 0; k < bytes.size(); ++k) {
            out.codes.push_back(byte_symbol_code(static_cast<std::uint8_t>(bytes[k])));
            out.spans.push_back(own ? Span{span.begin + k, span.begin + k + 1} : span);
        }
    }
    return out;
}

void byte_level(const PreTokenizerStep& step, const Piece& piece, std::vector<Piece>& out) {
    Piece spaced = piece;
    if (step.add_prefix_space && spaced.text.codes.front() != ' ') {
        spaced.text.codes.insert(spaced.text.codes.begin(), ' ');
        spaced.text.spans.insert(spaced.text.spans.begin(), spaced.text.spans.front());
    }
    std::vector<Piece> split;
    if (step.use_regex)
        cut(spaced, pattern_stretches(Pattern::gpt2, spaced.text), false, split);
    else
        split.push_back(std::move(spaced));
    for (const Piece& p : split) out.push_back({byte_symbols(p.text), p.rule});
}

void metaspace(const PreTokenizerStep& step, const Piece& piece, std::vector<Piece>& out) {
    Piece replaced = piece;
    std::replace(replaced.text.codes.begin(), replaced.text.codes.end(), std::uint32_t{' '},
                 step.replacement);
    const bool starts_with = replaced.text.codes.front() == step.replacement;
    const bool prepend =
        !starts_with &&
        (step.prepend_scheme == PrependScheme::always ||
         (step.prepend_scheme == PrependScheme::first && replaced.text.spans.front().begin == 0));
    if (prepend) {
        replaced.text.codes.insert(replaced.text.codes.begin(), step.replacement);
        replaced.text.spans.insert(replaced.text.spans.begin(), replaced.text.spans.front());
    }
    replaced.rule = "Metaspace";
    if (!step.split) {
        out.push_back(std::move(replaced));
        return;
    }
    cut(replaced, merge_matches(literal_stretches({step.replacement}, replaced.text), false), true,
        out);
}

const char* behavior_name(SplitBehavior behavior) {
    switch (behavior) {
        case SplitBehavior::isolated:
            return "Isolated";
        case SplitBehavior::removed:
            return "Removed";
        case SplitBehavior::merged_with_previous:
            return "MergedWithPrevious";
        case SplitBehavior::merged_with_next:
            return "MergedWithNext";
    }
    return "";
}

}  // namespace

void pre_tokenize(const PreTokenizerStep& step, std::vector<Piece>& pieces) {
    std::vector<Piece> out;
    out.reserve(pieces.size());
    for (const Piece& piece : pieces) {
        if (piece.text.codes.empty()) continue;
        switch (step.kind) {
            case PreTokenizerStep::Kind::byte_level:
                byte_level(step, piece, out);
                break;
            case PreTokenizerStep::Kind::metaspace:
                metaspace(step, piece, out);
                break;
            case PreTokenizerStep::Kind::split:
                cut(piece,
                    apply_behavior(step.pattern ? pattern_stretches(*step.pattern, piece.text)
                                                : literal_stretches(step.literal, piece.text),
                                   step.behavior),
                    false, out);
                break;
        }
    }
    pieces = std::move(out);
}

std::string describe(const PreTokenizerStep& step) {
    switch (step.kind) {
        case PreTokenizerStep::Kind::byte_level:
            return std::string("ByteLevel(add_prefix_space ") +
                   (step.add_prefix_space ? "true" : "false") + ", use_regex " +
                   (step.use_regex ? "true" : "false") + ")";
        case PreTokenizerStep::Kind::metaspace:
            return "Metaspace(\"" + utf8_of({step.replacement}) + "\", prepend_scheme " +
                   (step.prepend_scheme == PrependScheme::always  ? "always"
                    : step.prepend_scheme == PrependScheme::first ? "first"
                                                                  : "never") +
                   (step.split ? ", split" : "") + ")";
        case PreTokenizerStep::Kind::split:
            return std::string("Split(") +
                   (step.pattern ? pattern_text(*step.pattern)
                                 : "\"" + utf8_of(step.literal) + "\"") +
                   ", " + behavior_name(step.behavior) + ")";
    }
    return "";
}

namespace {

// GPT-2's one-pass pre-tokenizer that does what the steps do, if one does: it prefixes the
// whole text, so a ByteLevel after a Split qualifies only without add_prefix_space.
std::optional<ByteLevelPreTokenizer> one_pass(const std::vector<PreTokenizerStep>& steps) {
    using Kind = PreTokenizerStep::Kind;
    if (steps.size() == 1 && steps[0].kind == Kind::byte_level && steps[0].use_regex)
        return ByteLevelPreTokenizer(Pattern::gpt2, steps[0].add_prefix_space);
    if (steps.size() == 2 && steps[0].kind == Kind::split && steps[0].pattern &&
        steps[0].behavior == SplitBehavior::isolated && steps[1].kind == Kind::byte_level &&
        !steps[1].use_regex && !steps[1].add_prefix_space)
        return ByteLevelPreTokenizer(*steps[0].pattern, false);
    return std::nullopt;
}

}  // namespace

JsonPreTokenizer::JsonPreTokenizer(std::vector<PreTokenizerStep> steps,
                                   std::vector<NormalizedAddedToken> added)
    : steps_(std::move(steps)), added_(std::move(added)) {
    if (added_.empty()) one_pass_ = one_pass(steps_);
}

void JsonPreTokenizer::split_each(const NormalizedText& text,
                                  const std::function<void(PreToken&)>& take) const {
    if (one_pass_) return one_pass_->split_each(text, take);
    for (PreToken& piece : split(text)) take(piece);
}

std::string JsonPreTokenizer::describe() const {
    if (steps_.empty()) return "none (the text is one piece)";
    std::string out;
    for (std::size_t i = 0; i < steps_.size(); ++i)
        out += (i ? ", then " : "") + tokenizers::describe(steps_[i]);
    return out;
}

const NormalizedAddedToken* JsonPreTokenizer::added_at(const std::vector<std::uint32_t>& codes,
                                                       std::size_t at) const {
    const NormalizedAddedToken* best = nullptr;
    for (const NormalizedAddedToken& token : added_) {
        const std::size_t n = token.codes.size();
        if ((!best || n > best->codes.size()) && n > 0 && at + n <= codes.size() &&
            std::equal(token.codes.begin(), token.codes.end(), codes.begin() + at))
            best = &token;
    }
    return best;
}

void JsonPreTokenizer::split_stretch(AlignedText stretch, std::vector<PreToken>& out) const {
    if (stretch.codes.empty()) return;
    std::vector<Piece> pieces{{std::move(stretch), "whole text"}};
    for (const PreTokenizerStep& step : steps_) pre_tokenize(step, pieces);
    for (const Piece& piece : pieces) {
        if (!piece.text.codes.empty()) out.push_back(pre_token_from(piece.text, piece.rule));
    }
}

std::vector<PreToken> JsonPreTokenizer::split(const NormalizedText& text) const {
    if (one_pass_) return one_pass_->split(text);
    const AlignedText aligned = aligned_from(text);
    std::vector<PreToken> out;
    std::size_t stretch = 0;
    for (std::size_t at = 0; at < aligned.codes.size() && !added_.empty();) {
        const NormalizedAddedToken* added = added_at(aligned.codes, at);
        if (!added) {
            ++at;
            continue;
        }
        split_stretch(slice(aligned, stretch, at), out);
        PreToken token =
            pre_token_from(slice(aligned, at, at + added->codes.size()), "added token");
        token.text = added->content;
        token.added_id = added->id;
        out.push_back(std::move(token));
        at += added->codes.size();
        stretch = at;
    }
    split_stretch(slice(aligned, stretch, aligned.codes.size()), out);
    return out;
}

}  // namespace mha::tokenizers
