// Typed answers: brackets and names are dropped, separators split, digits checked.

#include "app/classroom/answer_form.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <limits>

#include "io/read_file.h"
#include "show/format.h"
#include "show/text_layout.h"

namespace mha {

namespace {

bool all_digits(const std::string& text) {
    return !text.empty() && text.size() <= 19 &&
           std::all_of(text.begin(), text.end(),
                       [](unsigned char c) { return std::isdigit(c) != 0; });
}

// "×" becomes x and an en dash "–" becomes -, so "4×" and "0–2" read as typed in ASCII.
std::string plain_signs(std::string text) {
    for (std::size_t at; (at = text.find("\xC3\x97")) != std::string::npos;) {
        text.replace(at, 2, "x");
    }
    for (std::size_t at; (at = text.find("\xE2\x80\x93")) != std::string::npos;) {
        text.replace(at, 3, "-");
    }
    return text;
}

// "torch.Size([2, 4])" -> " 2, 4 ": the wrapper and every bracket become spaces; "×" becomes x.
std::string unwrapped(std::string text) {
    const std::string size_prefix = "torch.size";
    text = lowercase(trimmed(text));
    if (text.rfind(size_prefix, 0) == 0) text.erase(0, size_prefix.size());
    text = plain_signs(text);
    for (char& c : text) {
        if (std::string("()[]{}").find(c) != std::string::npos) c = ' ';
    }
    return text;
}

// "0..2" or "0-2" -> 0, 1, 2 (a range of keys or steps, as the trace writes "keys 0..i");
// nullopt when token is not a range or spans more than max_range numbers.
std::optional<std::vector<std::uint64_t>> range_of(const std::string& token) {
    constexpr std::uint64_t max_range = 1 << 16;
    const std::size_t dots = token.find("..");
    const std::size_t dash = token.find('-');
    const std::size_t at = dots != std::string::npos ? dots : dash;
    if (at == std::string::npos) return std::nullopt;
    const std::string first = token.substr(0, at);
    const std::string last = token.substr(at + (dots != std::string::npos ? 2 : 1));
    if (!all_digits(first) || !all_digits(last)) return std::nullopt;
    const std::uint64_t low = std::stoull(first), high = std::stoull(last);
    if (high < low || high - low >= max_range) return std::nullopt;
    std::vector<std::uint64_t> numbers;
    for (std::uint64_t n = low; n <= high; ++n) numbers.push_back(n);
    return numbers;
}

// "263,168" -> "263168" when every group after the first has three digits; else unchanged.
std::string without_grouping(const std::string& text) {
    std::string digits;
    std::size_t group = 0;
    bool grouped = false;
    for (char c : text) {
        if (c == ',' || c == '_' || c == ' ') {
            if ((grouped && group != 3) || group == 0 || group > 3) return text;
            grouped = true;
            group = 0;
        } else {
            digits += c;
            ++group;
        }
    }
    if (grouped && group != 3) return text;
    return digits;
}

// "d_k = 32" -> "32", "step 12" -> "12", "steps 5 and 12" -> "5 and 12": a name before
// an equals sign, or a leading word of letters, is dropped.
std::string without_name(const std::string& text) {
    const std::size_t equals = text.find('=');
    if (equals != std::string::npos && text.find('=', equals + 1) == std::string::npos &&
        text.find_first_of(",;") == std::string::npos) {
        return trimmed(text.substr(equals + 1));
    }
    const std::string plain = trimmed(text);
    const std::size_t space = plain.find(' ');
    if (space == std::string::npos) return plain;
    const std::string word = lowercase(plain.substr(0, space));
    if (word == "step" || word == "steps" || word == "keys" || word == "key") {
        return trimmed(plain.substr(space + 1));
    }
    return plain;
}

}  // namespace

std::string trimmed(const std::string& text) {
    const std::size_t first = text.find_first_not_of(" \t\r\n");
    if (first == std::string::npos) return "";
    return text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
}

std::optional<std::vector<std::uint64_t>> parse_number_list(const std::string& text) {
    const std::string plain = unwrapped(without_name(text));
    std::vector<std::uint64_t> numbers;
    const std::string word = trimmed(plain);
    if (word == "none" || word == "-") return numbers;
    std::string token;
    auto finish_token = [&]() {
        const std::size_t equals = token.find('=');
        if (equals != std::string::npos) token.erase(0, equals + 1);  // "d_k=64" -> "64"
        if (token == "and") {
            token.clear();
            return true;
        }
        if (const auto range = range_of(token)) {
            numbers.insert(numbers.end(), range->begin(), range->end());
            token.clear();
            return true;
        }
        if (!all_digits(token)) return false;
        numbers.push_back(std::stoull(token));
        token.clear();
        return true;
    };
    for (char c : plain + " ") {
        const bool separator = c == ',' || c == ' ' || c == '\t' || c == 'x' || c == ';';
        if (!separator) {
            token += c;
        } else if (!token.empty() && !finish_token()) {
            return std::nullopt;
        }
    }
    if (numbers.empty()) return std::nullopt;
    return numbers;
}

std::optional<std::uint64_t> parse_amount(const std::string& text) {
    std::string plain = plain_signs(lowercase(without_name(text)));
    std::uint64_t unit = 1;
    // longer names first ("mib" before "b"); KB, MB and GB are read as the binary units the
    // trace prints; "4x" and "4 times" are how the trace words a ratio ("4x smaller")
    constexpr std::uint64_t kib = 1024, mib = kib * 1024, gib = mib * 1024;
    const std::vector<std::pair<std::string, std::uint64_t>> units = {
        {"bytes", 1}, {"times", 1}, {"kib", kib}, {"mib", mib}, {"gib", gib},
        {"kb", kib},  {"mb", mib},  {"gb", gib},  {"b", 1},     {"x", 1}};
    for (const auto& [name, size] : units) {
        if (plain.size() > name.size() &&
            plain.compare(plain.size() - name.size(), name.size(), name) == 0) {
            plain = trimmed(plain.substr(0, plain.size() - name.size()));
            unit = size;
            break;
        }
    }
    plain = without_grouping(plain);
    const std::size_t point = plain.find('.');
    const std::string whole = plain.substr(0, point);
    const std::string fraction = point == std::string::npos ? "" : plain.substr(point + 1);
    if (!all_digits(whole) || (point != std::string::npos && !all_digits(fraction))) {
        return std::nullopt;
    }
    if (fraction.size() > 6 || whole.size() + fraction.size() > 19) return std::nullopt;
    std::uint64_t scale = 1;
    for (std::size_t i = 0; i < fraction.size(); ++i) scale *= 10;
    const std::uint64_t mantissa = std::stoull(whole + fraction);
    if (mantissa > std::numeric_limits<std::uint64_t>::max() / unit) return std::nullopt;
    if ((mantissa * unit) % scale != 0) return std::nullopt;  // a fraction of a byte
    return mantissa * unit / scale;
}

bool answer_matches(const Expected& expected, const std::string& typed) {
    if (expected.kind == AnswerKind::Word) {
        // true and false are how PyTorch prints a yes or no (is_contiguous())
        std::string word = lowercase(trimmed(typed));
        if (word == "true") word = "yes";
        if (word == "false") word = "no";
        return word == lowercase(expected.word);
    }
    if (expected.kind == AnswerKind::Number) {
        const std::optional<std::uint64_t> number = parse_amount(typed);
        return number && expected.numbers.size() == 1 && *number == expected.numbers.front();
    }
    std::optional<std::vector<std::uint64_t>> list = parse_number_list(typed);
    if (!list) return false;
    if (expected.kind == AnswerKind::StepList) {
        std::sort(list->begin(), list->end());
        list->erase(std::unique(list->begin(), list->end()), list->end());
    }
    return *list == expected.numbers;
}

std::vector<std::string> read_answer_file(const std::string& path) {
    // bounded, so /dev/zero ends, and a directory is refused
    const std::string text =
        read_small_file(path, max_answers_bytes, "an answers file (one answer per line)");
    std::vector<std::string> answers;
    const std::string bom = "\xEF\xBB\xBF";  // an editor's UTF-8 mark, not part of answer 1
    for (std::size_t start = text.rfind(bom, 0) == 0 ? bom.size() : 0; start < text.size();) {
        const std::size_t end = std::min(text.find('\n', start), text.size());
        std::string line = text.substr(start, end - start);
        start = end + 1;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.rfind('#', 0) != 0) answers.push_back(line);
    }
    return answers;
}

std::string spelled(const Expected& expected) {
    if (expected.kind == AnswerKind::Word) return expected.word;
    if (expected.kind == AnswerKind::Number) return with_commas(expected.numbers.front());
    if (expected.numbers.empty()) return "none";
    const std::string list = joined(expected.numbers, ", ");
    return expected.kind == AnswerKind::SizeList ? "(" + list + ")" : list;
}

}  // namespace mha
