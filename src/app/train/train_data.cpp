// The corpus as tokens, and train.py's make_batch with copies_to_end, seeded per step.

#include "app/train/train_data.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.h"
#include "core/forms/model.h"
#include "io/init.h"
#include "io/printable.h"

namespace mha {

namespace {

// A byte that starts no UTF-8 character is kept as invalid_byte + the byte: no code point.
constexpr std::uint32_t invalid_byte = 0x110000;
constexpr std::size_t shortest_segment = 8, longest_segment = 32;

// The code point of each character (invalid_byte + the byte for a stray byte); throws for a
// text that looks binary.
std::vector<std::uint32_t> decode(const std::string& text, const std::string& source) {
    std::vector<std::uint32_t> codes;
    codes.reserve(text.size());  // at most a character a byte: no growth past 4 bytes a byte
    std::size_t invalid = 0;
    for (std::size_t i = 0; i < text.size();) {
        if (text[i] == '\0') {
            throw Error(source + " looks binary (a NUL byte at offset " + std::to_string(i) +
                        "); mha train reads UTF-8 text");
        }
        const std::size_t length = utf8_length(text, i);
        codes.push_back(length == 0 ? invalid_byte + static_cast<unsigned char>(text[i])
                                    : utf8_code_point(text, i, length));
        invalid += length == 0;
        i += std::max<std::size_t>(1, length);
    }
    if (invalid * 10 > codes.size()) {
        throw Error(source + " looks binary (" + std::to_string(invalid) + " of its " +
                    std::to_string(codes.size()) +
                    " characters are not UTF-8); mha train reads UTF-8 text");
    }
    return codes;
}

// The code points below this, the Basic Multilingual Plane (nearly every character of a
// text), are counted and looked up in tables; the rest in a map and the vocabulary itself.
constexpr std::uint32_t table_codes = 0x10000;

// Token 0, then the characters by code point: all of them, or the 255 most frequent.
std::vector<std::uint32_t> vocabulary(const std::vector<std::uint32_t>& codes) {
    std::vector<std::size_t> table(table_codes);
    std::map<std::uint32_t, std::size_t> beyond;
    for (const std::uint32_t code : codes) {
        if (code < table_codes) {
            ++table[code];
        } else if (code < invalid_byte) {
            ++beyond[code];
        }
    }
    std::vector<std::pair<std::size_t, std::uint32_t>> by_count;  // by code point
    for (std::uint32_t code = 0; code < table_codes; ++code)
        if (table[code] != 0) by_count.emplace_back(table[code], code);
    for (const auto& [code, count] : beyond) by_count.emplace_back(count, code);
    // most frequent first, ties by the smaller code point
    std::stable_sort(by_count.begin(), by_count.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    if (by_count.size() > max_corpus_characters) by_count.resize(max_corpus_characters);
    std::vector<std::uint32_t> vocab;
    for (const auto& each : by_count) vocab.push_back(each.second);
    std::sort(vocab.begin(), vocab.end());
    vocab.insert(vocab.begin(), 0);
    return vocab;
}

std::uint64_t fnv1a(const std::string& bytes) {
    std::uint64_t hash = 0xcbf29ce484222325ull;
    for (const char c : bytes) hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
    return hash;
}

// context + 1 tokens from data at `start`, as size_t.
std::vector<std::size_t> window(const std::vector<std::uint8_t>& data, std::size_t start,
                                std::size_t context) {
    return {data.begin() + std::ptrdiff_t(start),
            data.begin() + std::ptrdiff_t(start + context + 1)};
}

// Inputs and targets of rows of context + 1 tokens.
void append_row(Batch& out, const std::vector<std::size_t>& row) {
    out.tokens.insert(out.tokens.end(), row.begin(), row.end() - 1);
    out.targets.insert(out.targets.end(), row.begin() + 1, row.end());
}

}  // namespace

Corpus read_corpus(const std::string& text, const std::string& source) {
    if (text.empty()) throw Error(source + " is empty; mha train needs UTF-8 text to learn from");
    const std::vector<std::uint32_t> codes = decode(text, source);
    Corpus c;
    c.vocab = vocabulary(codes);
    c.characters = codes.size();
    c.fingerprint = fnv1a(text);
    // a character's token is its place in the vocabulary (sorted by code point), or 0
    std::vector<std::uint8_t> table(table_codes, 0);
    for (std::size_t t = 1; t < c.vocab.size(); ++t)
        if (c.vocab[t] < table_codes) table[c.vocab[t]] = std::uint8_t(t);
    const auto token_of = [&](std::uint32_t code) {
        if (code < table_codes) return table[code];
        const auto found = std::lower_bound(c.vocab.begin() + 1, c.vocab.end(), code);
        return found != c.vocab.end() && *found == code ? std::uint8_t(found - c.vocab.begin())
                                                        : std::uint8_t(0);
    };
    const std::size_t split = std::size_t(double(c.characters) * (1.0 - held_out_fraction));
    c.train.reserve(split);
    c.held_out.reserve(c.characters - split);
    for (std::size_t i = 0; i < c.characters; ++i) {
        const std::uint8_t token = token_of(codes[i]);
        if (i < split) {
            c.train.push_back(token);
        } else {
            c.held_out.push_back(token);
            c.held_out_characters.push_back(codes[i] < invalid_byte
                                                ? utf8_encode(codes[i])
                                                : std::string(1, char(codes[i] - invalid_byte)));
        }
    }
    return c;
}

void check_corpus_fits(const Corpus& c, const std::string& source, std::size_t context) {
    if (c.train.size() > context + 1 && c.held_out.size() > context + 1) return;
    const std::size_t need = std::size_t(std::ceil(double(context + 2) / held_out_fraction));
    throw Error(source + " has " + std::to_string(c.characters) +
                " characters, too few for one batch: its last 3% are held out and each part "
                "needs a window of --context " +
                std::to_string(context) + " characters and their next one (about " +
                std::to_string(need) + " characters in all)");
}

std::vector<std::size_t> letter_tokens(const Corpus& c) {
    std::vector<std::size_t> letters;
    for (char letter = 'a'; letter <= 'z'; ++letter) {
        const auto found = std::find(c.vocab.begin(), c.vocab.end(), std::uint32_t(letter));
        letters.push_back(found == c.vocab.end() ? 0 : std::size_t(found - c.vocab.begin()));
    }
    return letters;
}

Batch training_batch(const Corpus& c, std::uint64_t seed, std::uint64_t step, std::size_t batch,
                     std::size_t context) {
    Random random(seed, batch_stream, step);
    std::vector<std::vector<std::size_t>> rows;
    for (std::size_t r = 0; r < batch; ++r)
        rows.push_back(window(c.train, random.below(c.train.size() - context - 1), context));
    const std::vector<std::size_t> letters = letter_tokens(c);
    const std::size_t longest = std::min(longest_segment, context / 2);
    const std::size_t shortest = std::min(shortest_segment, longest);
    const auto repeated = std::size_t(std::nearbyint(double(batch) * repeat_fraction));
    for (std::size_t r = 0; r < repeated && longest > 0; ++r) {
        const std::size_t length = shortest + random.below(longest - shortest + 1);
        std::vector<std::size_t> segment;
        for (std::size_t i = 0; i < length; ++i)
            segment.push_back(letters[random.below(letters.size())]);
        const std::size_t first = random.below(context + 1 - 2 * length);
        for (std::size_t i = first; i <= context; ++i) rows[r][i] = segment[(i - first) % length];
    }
    Batch out;
    for (const std::vector<std::size_t>& row : rows) append_row(out, row);
    for (std::size_t& token : out.tokens)
        if (random.uniform() < float(unknown_fraction)) token = unknown_token;
    return out;
}

Batch held_out_batch(const Corpus& c, std::uint64_t seed, std::size_t batch, std::size_t context) {
    Random random(seed, evaluation_stream, 0);
    Batch out;
    for (std::size_t r = 0; r < batch; ++r)
        append_row(out, window(c.held_out, random.below(c.held_out.size() - context - 1), context));
    return out;
}

}  // namespace mha
