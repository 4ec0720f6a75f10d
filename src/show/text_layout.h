#pragma once
// Text layout helpers shared by the printers: widths of UTF-8 text, padding and
// filling words into 80-column lines.

#include <cstddef>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace mha {

inline constexpr std::size_t text_columns = 80;
// The escape sequence that turns a terminal's colours and bold off (SGR 0).
inline const std::string ansi_reset = "\x1b[0m";

// Columns a UTF-8 string takes in a terminal: one per code point (ᵀ, √, · are one each).
std::size_t display_width(std::string_view text);
// display_width of what a terminal shows: ANSI escape sequences (ESC [ ... letter) take none.
std::size_t visible_width(const std::string& text);
// The first `width` visible columns of a line; its escape sequences kept, and a colour left on
// at the cut reset.
std::string cut_to_width(const std::string& text, std::size_t width);
std::string padded_right(const std::string& text, std::size_t width);
std::string padded_left(const std::string& text, std::size_t width);
// The text with its ASCII letters in lower case.
std::string lowercase(std::string text);
// "1,,8" -> {"1", "", "8"}: the pieces of text between separators ("" -> {""}).
std::vector<std::string> split(const std::string& text, char separator);
// The words between spaces, none empty.
std::vector<std::string> words_of(const std::string& text);
// Every line of text after indent, each ending in a newline ("a\nb" -> "  a\n  b\n").
std::string indented_lines(const std::string& text, const std::string& indent);
// words_of, with a byte unit kept on its number's word ("8.6 GiB", "96 B,"), so that a filled
// line never breaks a size in two.
std::vector<std::string> words_keeping_sizes(const std::string& text);

// Writes pieces joined by separator, starting a new line (prefix next) whenever
// the next piece would pass the 80th column; a piece is never split.
void write_filled(std::ostream& out, const std::vector<std::string>& pieces,
                  const std::string& separator, const std::string& first, const std::string& next);

}  // namespace mha
