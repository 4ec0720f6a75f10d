// The pre-tokenizer patterns as matchers over code points. Each tries its branches in the
// order of the alternation at the current position, as a backtracking regex engine does.

#include "tokenize/patterns.h"

#include "tokenize/unicode.h"

namespace mha::tokenizers {

namespace {

bool is_other(std::uint32_t c) {  // [^\s\p{L}\p{N}]
    return !unicode::is_space(c) && !unicode::is_letter(c) && !unicode::is_number(c);
}

// The byte where the run of code points from `from` that satisfy `in_class` ends; last, when
// given, receives where the run's last code point starts.
template <typename InClass>
std::size_t run_end(std::string_view text, std::size_t from, InClass in_class,
                    std::size_t* last = nullptr) {
    while (from < text.size()) {
        const CodePoint c = code_point_at(text, from);
        if (!in_class(c.code)) break;
        if (last) *last = from;
        from += c.length;
    }
    return from;
}

// GPT-2's contractions: 's|'t|'re|'ve|'m|'ll|'d, tried in that order; null when none matches.
const char* gpt2_contraction(std::string_view text, std::size_t at, std::size_t& end) {
    static const char* const branches[] = {"'s", "'t", "'re", "'ve", "'m", "'ll", "'d"};
    if (text[at] != '\'') return nullptr;
    for (const char* branch : branches) {
        const std::string_view literal(branch);
        if (text.compare(at, literal.size(), literal) == 0) {
            end = at + literal.size();
            return branch;
        }
    }
    return nullptr;
}

// One match of GPT-2's pattern at `at` (never empty: every code point is a letter, a number,
// a space or other): 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
const char* gpt2_match(std::string_view text, std::size_t at, std::size_t& end) {
    if (const char* branch = gpt2_contraction(text, at, end)) return branch;
    // " ?X+": with the space when X follows it, else X from here (a space is never X)
    const std::size_t from = text[at] == ' ' && at + 1 < text.size() ? at + 1 : at;
    const std::uint32_t c = code_point_at(text, from).code;
    if (unicode::is_letter(c)) {
        end = run_end(text, from, unicode::is_letter);
        return " ?\\p{L}+";
    }
    if (unicode::is_number(c)) {
        end = run_end(text, from, unicode::is_number);
        return " ?\\p{N}+";
    }
    if (is_other(c)) {
        end = run_end(text, from, is_other);
        return " ?[^\\s\\p{L}\\p{N}]+";
    }
    // whitespace: all of it at the end of the text, else all but the last space, which goes
    // with what follows; a single space before a non-space falls to the last branch
    std::size_t last = at;
    const std::size_t run = run_end(text, at, unicode::is_space, &last);
    if (run == text.size() || last > at) {
        end = run == text.size() ? run : last;
        return "\\s+(?!\\S)";
    }
    end = run;
    return "\\s+";
}

}  // namespace

const char* pattern_text(Pattern pattern) {
    switch (pattern) {
        case Pattern::gpt2:
            return "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| "
                   "?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
    }
    return "";
}

std::optional<Pattern> pattern_of(std::string_view text) {
    for (const Pattern pattern : {Pattern::gpt2}) {
        if (text == pattern_text(pattern)) return pattern;
    }
    return std::nullopt;
}

std::vector<PatternPiece> match_pattern(Pattern pattern, std::string_view text) {
    std::vector<PatternPiece> pieces;
    for (std::size_t at = 0; at < text.size();) {
        std::size_t end = at;
        const char* branch = nullptr;
        switch (pattern) {
            case Pattern::gpt2:
                branch = gpt2_match(text, at, end);
                break;
        }
        if (branch == nullptr) {  // no branch matches here: findall moves on one code point
            at += code_point_at(text, at).length;
            continue;
        }
        pieces.push_back({at, end, branch});
        at = end;
    }
    return pieces;
}

}  // namespace mha::tokenizers
