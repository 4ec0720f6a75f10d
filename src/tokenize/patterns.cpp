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

// "\\s+(?!\\S)|\\s+" at whitespace: all of it at the end of the text, else all but the last
// space, which goes with what follows; a single space before a non-space falls to "\\s+"
const char* whitespace_match(std::string_view text, std::size_t at, std::size_t& end) {
    std::size_t last = at;
    const std::size_t run = run_end(text, at, unicode::is_space, &last);
    if (run == text.size() || last > at) {
        end = run == text.size() ? run : last;
        return "\\s+(?!\\S)";
    }
    end = run;
    return "\\s+";
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
    return whitespace_match(text, at, end);
}

bool is_line_break(std::uint32_t c) { return c == '\r' || c == '\n'; }

bool is_letter_prefix(std::uint32_t c) {  // [^\r\n\p{L}\p{N}]
    return !is_line_break(c) && !unicode::is_letter(c) && !unicode::is_number(c);
}

// Llama 3's and Qwen 2's contractions, (?i:'s|'t|'re|'ve|'m|'ll|'d): GPT-2's in either case.
// ASCII case only: a regex engine's case folding would also take U+017F (long s) for s.
const char* folded_contraction(std::string_view text, std::size_t at, std::size_t& end) {
    static const char* const branches[] = {"'s", "'t", "'re", "'ve", "'m", "'ll", "'d"};
    if (text[at] != '\'') return nullptr;
    const auto lower = [](char c) {
        return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
    };
    for (const char* branch : branches) {
        const std::string_view literal(branch);
        std::size_t i = 1;
        while (i < literal.size() && at + i < text.size() && lower(text[at + i]) == literal[i]) ++i;
        if (i == literal.size()) {
            end = at + literal.size();
            return "(?i:'s|'t|'re|'ve|'m|'ll|'d)";
        }
    }
    return nullptr;
}

// One match of Llama 3's pattern (max_digits 3) or Qwen 2's (max_digits 1) at `at`, never
// empty: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
// ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
const char* llama3_match(std::string_view text, std::size_t at, std::size_t& end,
                         std::size_t max_digits) {
    if (const char* branch = folded_contraction(text, at, end)) return branch;
    const CodePoint c = code_point_at(text, at);
    const std::size_t next = at + c.length;
    const bool letter_next =
        next < text.size() && unicode::is_letter(code_point_at(text, next).code);
    // "[^\r\n\p{L}\p{N}]?\p{L}+": one other character (a space, a tab, a mark) may lead the letters
    if (unicode::is_letter(c.code) || (is_letter_prefix(c.code) && letter_next)) {
        end = run_end(text, next, unicode::is_letter);
        return "[^\\r\\n\\p{L}\\p{N}]?\\p{L}+";
    }
    if (unicode::is_number(c.code)) {
        end = next;
        for (std::size_t digits = 1; digits < max_digits && end < text.size(); ++digits) {
            const CodePoint d = code_point_at(text, end);
            if (!unicode::is_number(d.code)) break;
            end += d.length;
        }
        return max_digits == 1 ? "\\p{N}" : "\\p{N}{1,3}";
    }
    // " ?[^\s\p{L}\p{N}]+[\r\n]*": with the space when an other character follows it
    const std::size_t from =
        text[at] == ' ' && next < text.size() && is_other(code_point_at(text, next).code) ? next
                                                                                          : at;
    if (is_other(code_point_at(text, from).code)) {
        end = run_end(text, run_end(text, from, is_other), is_line_break);
        return " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*";
    }
    // whitespace: up to its last line break when it has one ("\s*[\r\n]+"), else as GPT-2's
    const std::size_t run = run_end(text, at, unicode::is_space);
    std::size_t after_break = at;
    for (std::size_t i = at; i < run;) {
        const CodePoint w = code_point_at(text, i);
        i += w.length;
        if (is_line_break(w.code)) after_break = i;
    }
    if (after_break > at) {
        end = after_break;
        return "\\s*[\\r\\n]+";
    }
    return whitespace_match(text, at, end);
}

}  // namespace

const char* pattern_text(Pattern pattern) {
    switch (pattern) {
        case Pattern::gpt2:
            return "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| "
                   "?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
        case Pattern::llama3:
            return "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
                   "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
        case Pattern::qwen2:
            return "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
                   "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
    }
    return "";
}

std::optional<Pattern> pattern_of(std::string_view text) {
    for (const Pattern pattern : {Pattern::gpt2, Pattern::llama3, Pattern::qwen2}) {
        if (text == pattern_text(pattern)) return pattern;
    }
    return std::nullopt;
}

void for_each_match(Pattern pattern, std::string_view text,
                    const std::function<void(const PatternPiece&)>& take) {
    for (std::size_t at = 0; at < text.size();) {
        std::size_t end = at;
        const char* branch = nullptr;
        switch (pattern) {
            case Pattern::gpt2:
                branch = gpt2_match(text, at, end);
                break;
            case Pattern::llama3:
                branch = llama3_match(text, at, end, 3);
                break;
            case Pattern::qwen2:
                branch = llama3_match(text, at, end, 1);
                break;
        }
        if (branch == nullptr) {  // no branch matches here: findall moves on one code point
            at += code_point_at(text, at).length;
            continue;
        }
        take({at, end, branch});
        at = end;
    }
}

std::vector<PatternPiece> match_pattern(Pattern pattern, std::string_view text) {
    std::vector<PatternPiece> pieces;
    pieces.reserve(text.size() / 4 + 1);  // English runs about four bytes a piece
    for_each_match(pattern, text, [&pieces](const PatternPiece& p) { pieces.push_back(p); });
    return pieces;
}

}  // namespace mha::tokenizers
