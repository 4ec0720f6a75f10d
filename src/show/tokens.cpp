// The token table, the ids line and the stage-by-stage trace of a tokenizer.

#include "show/tokens.h"

#include "io/printable.h"
#include "show/text_layout.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <string>

namespace mha {

namespace {

using tokenizers::TokenizeTrace;
using tokenizers::TokenPiece;

constexpr std::size_t widest_piece = 16;  // pieces wider than this push their line right

std::string span(std::size_t begin, std::size_t end) {
    return std::to_string(begin) + ".." + std::to_string(end);
}

// Input bytes as a one-line quotation: "\n", "\xF0" for a byte cut from its character.
std::string quoted_bytes(std::string_view text, std::size_t begin, std::size_t end) {
    return "\"" + escaped(text.substr(begin, end - begin)) + "\"";
}

std::string hex_bytes(std::string_view text, std::size_t begin, std::size_t end) {
    std::string out;
    for (std::size_t i = begin; i < end; ++i) {
        char byte[4];
        std::snprintf(byte, sizeof byte, "%02X", static_cast<unsigned char>(text[i]));
        out += (i > begin ? " " : "") + std::string(byte);
    }
    return out;
}

std::string piece_label(std::size_t index) { return "piece " + std::to_string(index); }

void print_pieces(std::ostream& out, std::string_view text, const TokenizeTrace& trace) {
    out << "2. pre-tokenizer: " << sanitized(trace.pre_tokenizer) << "\n";
    if (trace.pieces.empty()) out << "   no pieces\n";
    for (std::size_t i = 0; i < trace.pieces.size(); ++i) {
        const tokenizers::PreToken& p = trace.pieces[i];
        const std::size_t begin = p.source(0), end = p.end_source();
        out << "   " << padded_right(piece_label(i), 10) << padded_right(span(begin, end), 10)
            << padded_right(quoted_bytes(text, begin, end), 18) << " branch /" << p.branch << "/\n";
    }
}

void print_symbols(std::ostream& out, std::string_view text, const TokenizeTrace& trace) {
    out << "3. bytes to symbols (each byte one symbol of the vocabulary's alphabet):\n";
    for (std::size_t i = 0; i < trace.pieces.size(); ++i) {
        const tokenizers::PreToken& p = trace.pieces[i];
        out << "   " << padded_right(piece_label(i), 10)
            << hex_bytes(text, p.source(0), p.end_source()) << "  ->  " << sanitized(p.text)
            << "\n";
    }
}

void print_merges(std::ostream& out, const TokenizeTrace& trace,
                  const tokenizers::Vocabulary& vocabulary) {
    out << "4. merges, lowest rank first in each piece (" << trace.merges.size() << "):\n";
    for (const TokenizeTrace::Merge& m : trace.merges) {
        out << "   " << padded_right(piece_label(m.piece), 10)
            << padded_right("rank " + std::to_string(m.merge.rank), 12)
            << sanitized(vocabulary.token(m.merge.left)) << " + "
            << sanitized(vocabulary.token(m.merge.right)) << "  ->  "
            << sanitized(vocabulary.token(m.merge.result)) << "\n";
    }
    if (trace.whole.empty()) return;
    out << "   no merges in piece" << (trace.whole.size() > 1 ? "s" : "");
    for (std::size_t i = 0; i < trace.whole.size(); ++i)
        out << (i ? ", " : " ") << trace.whole[i];
    out << ": the vocabulary has " << (trace.whole.size() > 1 ? "them" : "it")
        << " whole (ignore_merges)\n";
}

void print_fallbacks(std::ostream& out, const TokenizeTrace& trace,
                     const tokenizers::Vocabulary& vocabulary) {
    out << "5. byte fallback:";
    if (trace.fallbacks.empty()) out << " none";
    out << "\n";
    for (const TokenizeTrace::Fallback& f : trace.fallbacks) {
        out << "   " << padded_right(piece_label(f.piece), 10) << "character "
            << f.fallback.character << "  ->";
        for (const std::uint32_t id : f.fallback.ids) out << " " << sanitized(vocabulary.token(id));
        out << "\n";
    }
}

void print_specials(std::ostream& out, const TokenizeTrace& trace, bool with_special) {
    out << "6. special tokens added:";
    if (trace.specials.empty()) out << (with_special ? " none" : " none (--no-special)");
    out << "\n";
    for (const TokenizeTrace::Special& s : trace.specials) {
        out << "   at " << s.position << ": " << sanitized(s.piece) << " (id " << s.id << ")\n";
    }
}

}  // namespace

void print_tokens(std::ostream& out, std::string_view text, const std::vector<TokenPiece>& tokens) {
    std::size_t width = 5;
    for (const TokenPiece& t : tokens)
        width = std::max(width, std::min(widest_piece, display_width(sanitized(t.piece))));
    out << padded_left("id", 7) << "  " << padded_right("bytes", 12) << padded_right("piece", width)
        << "  text\n";
    // a quarter of a million lines for a megabyte of text: each is built in one buffer, written
    // out 64 KiB at a time, with no string made per column
    constexpr std::size_t flush_at = std::size_t(1) << 16;
    std::string lines;
    lines.reserve(flush_at + 256);
    char number[24];
    auto append_number = [&](std::size_t value) {
        const auto digits = static_cast<std::size_t>(
            std::to_chars(number, number + sizeof number, value).ptr - number);
        lines.append(number, digits);
        return digits;
    };
    auto pad_to = [&](std::size_t start, std::size_t columns) {
        const std::size_t n = display_width(std::string_view(lines).substr(start));
        if (n < columns) lines.append(columns - n, ' ');
    };
    for (const TokenPiece& t : tokens) {
        std::size_t start = lines.size();
        const std::size_t digits = append_number(t.id);  // right-aligned in 7 columns
        if (digits < 7) lines.insert(start, 7 - digits, ' ');
        lines += "  ";
        start = lines.size();
        append_number(t.begin);
        lines += "..";
        append_number(t.end);
        pad_to(start, 12);
        start = lines.size();
        lines += sanitized(t.piece);
        pad_to(start, width);
        lines += "  \"";
        lines += escaped(text.substr(t.begin, t.end - t.begin));
        lines += "\"\n";
        if (lines.size() >= flush_at) {
            out << lines;
            lines.clear();
        }
    }
    out << lines << tokens.size() << " tokens from " << text.size() << " bytes\n";
}

void print_ids(std::ostream& out, const std::vector<std::uint32_t>& ids) {
    std::string line;
    line.reserve(ids.size() * 6 + 1);
    char number[16];
    for (std::size_t i = 0; i < ids.size(); ++i) {
        if (i > 0) line += ' ';
        const auto end = std::to_chars(number, number + sizeof number, ids[i]).ptr;
        line.append(number, end);
    }
    line += '\n';
    out << line;
}

void print_tokenize_trace(std::ostream& out, std::string_view text, const TokenizeTrace& trace,
                          const tokenizers::Vocabulary& vocabulary, bool with_special) {
    out << "1. normalizer:";
    if (trace.normalizers.empty()) out << " none";
    out << "\n";
    for (const TokenizeTrace::Normalized& n : trace.normalizers) {
        out << "   " << sanitized(n.name) << "  ->  \"" << escaped(n.text) << "\"\n";
    }
    print_pieces(out, text, trace);
    print_symbols(out, text, trace);
    print_merges(out, trace, vocabulary);
    print_fallbacks(out, trace, vocabulary);
    print_specials(out, trace, with_special);
}

}  // namespace mha
