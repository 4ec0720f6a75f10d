// Text layout helpers shared by the printers.

#include "show/text_layout.h"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace mha {

std::string indented_lines(const std::string& text, const std::string& indent) {
    std::string result;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) result += indent + line + "\n";
    return result;
}

std::size_t display_width(std::string_view text) {
    std::size_t width = 0;
    for (unsigned char c : text) width += (c & 0xC0) != 0x80 ? 1 : 0;
    return width;
}

namespace {

// The length of the escape sequence starting at text[at] (ESC [ parameters, then a final
// letter), 0 when none starts there.
std::size_t escape_length(const std::string& text, std::size_t at) {
    if (text[at] != '\x1b' || at + 1 >= text.size() || text[at + 1] != '[') return 0;
    std::size_t end = at + 2;
    while (end < text.size() && !std::isalpha(static_cast<unsigned char>(text[end]))) ++end;
    return end < text.size() ? end + 1 - at : text.size() - at;
}

}  // namespace

std::size_t visible_width(const std::string& text) {
    std::size_t width = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const std::size_t escape = escape_length(text, i);
        if (escape > 0) {
            i += escape - 1;
        } else if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
            ++width;
        }
    }
    return width;
}

std::string cut_to_width(const std::string& text, std::size_t width) {
    std::string kept;
    std::size_t used = 0;
    bool coloured = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const std::size_t escape = escape_length(text, i);
        if (escape > 0) {
            kept += text.substr(i, escape);
            coloured = text.compare(i, escape, ansi_reset) != 0;
            i += escape - 1;
            continue;
        }
        const bool starts = (static_cast<unsigned char>(text[i]) & 0xC0) != 0x80;
        if (starts && used++ == width) break;
        kept += text[i];
    }
    return coloured ? kept + ansi_reset : kept;
}

std::string padded_right(const std::string& text, std::size_t width) {
    const std::size_t used = display_width(text);
    return text + std::string(width > used ? width - used : 0, ' ');
}

std::string padded_left(const std::string& text, std::size_t width) {
    const std::size_t used = display_width(text);
    return std::string(width > used ? width - used : 0, ' ') + text;
}

std::string lowercase(std::string text) {
    for (char& c : text) c = char(std::tolower(static_cast<unsigned char>(c)));
    return text;
}

std::vector<std::string> split(const std::string& text, char separator) {
    std::vector<std::string> pieces;
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t end = std::min(text.find(separator, start), text.size());
        pieces.push_back(text.substr(start, end - start));
        start = end + 1;
    }
    return pieces;
}

std::vector<std::string> words_of(const std::string& text) {
    std::vector<std::string> words;
    for (std::string& word : split(text, ' ')) {
        if (!word.empty()) words.push_back(std::move(word));
    }
    return words;
}

std::vector<std::string> words_keeping_sizes(const std::string& text) {
    static const std::vector<std::string> units = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    std::vector<std::string> words;
    for (const std::string& word : words_of(text)) {
        const std::string unit = word.substr(0, word.find_first_of(",.;:)"));
        const bool after_number = !words.empty() && !words.back().empty() &&
                                  std::isdigit(static_cast<unsigned char>(words.back().back()));
        if (after_number && std::find(units.begin(), units.end(), unit) != units.end()) {
            words.back() += " " + word;
        } else {
            words.push_back(word);
        }
    }
    return words;
}

void write_filled(std::ostream& out, const std::vector<std::string>& pieces,
                  const std::string& separator, const std::string& first, const std::string& next) {
    std::string line = first;
    bool line_empty = true;
    for (const std::string& piece : pieces) {
        const std::string joined = line + (line_empty ? "" : separator) + piece;
        if (!line_empty && display_width(joined) > text_columns) {
            out << line << "\n";
            line = next + piece;
        } else {
            line = joined;
        }
        line_empty = false;
    }
    out << line << "\n";
}

}  // namespace mha
