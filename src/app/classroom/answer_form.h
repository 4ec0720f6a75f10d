#pragma once
// Reading a learner's typed answer the ways people write it: shapes as
// "2,4,8,64", "(2, 4, 8, 64)", "[2 4 8 64]", "2x4x8x64", "torch.Size([2, 4, 8, 64])"
// or "(B=2, h=4, N=8, d_k=64)"; counts as "263168", "263,168" or "263_168", ratios as
// "4x" or "4 times"; byte counts also as "16 KiB", "1.5 MiB" or "4MB", with or without a
// name before them ("d_k = 32", "h=4", "step 12"); keys as "0, 1, 2", "0..2" or "0-2";
// yes and no also as true and false. One checker for the quiz and `mha grade`.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mha {

// The text without its leading and trailing spaces, tabs and line ends.
std::string trimmed(const std::string& text);

// A list of whole numbers, in order; "none" or "-" is the empty list; "0..2" and "0-2" stand
// for 0, 1, 2. nullopt when anything else is in the text.
std::optional<std::vector<std::uint64_t>> parse_number_list(const std::string& text);

// One whole number, with optional thousands separators and an optional unit B,
// KiB, MiB or GiB (binary, as the trace prints bytes; KB, MB and GB are read the same), or
// x or "times" for a ratio, after an optional name ("d_k = 32", "d_k=32", "step 12").
// nullopt when the text is not one number or names a fraction of a byte.
std::optional<std::uint64_t> parse_amount(const std::string& text);

enum class AnswerKind {
    Number,    // one whole number: d_k, a count, bytes
    SizeList,  // sizes in order: (2, 4, 8, 64)
    StepList,  // step or key numbers in any order, or none
    Word,      // one word, case-insensitive: yes, keep
};

// The expected answer of a kind: numbers (Number: one; lists: in order) or a word.
struct Expected {
    AnswerKind kind = AnswerKind::Number;
    std::vector<std::uint64_t> numbers;
    std::string word;
};

// Whether typed, as a learner types it, is the expected answer.
bool answer_matches(const Expected& expected, const std::string& typed);

// What an answers file (and grade's key on stdin) may hold: a class's answers take a few
// hundred bytes; the bound ends /dev/zero or an endless pipe at once.
inline constexpr std::uint64_t max_answers_bytes = std::uint64_t(1) << 20;

// An answers file: one answer per line, in order; lines starting with # are comments,
// a trailing carriage return is dropped. Throws mha::Error when the file cannot be read, is
// a directory or holds more than max_answers_bytes.
std::vector<std::string> read_answer_file(const std::string& path);

// The expected answer the way the trace writes it: "(2, 4, 8, 64)", "16,384", "0, 1", "yes".
std::string spelled(const Expected& expected);

}  // namespace mha
