// Tokens, their seeded embeddings and the sinusoidal positional encoding.

#include "io/text.h"

#include <cctype>
#include <cmath>

#include "core/error.h"
#include "io/init.h"
#include "io/printable.h"

namespace mha {

namespace {

constexpr std::uint32_t embedding_stream = 3;

bool is_word_byte(unsigned char c) { return std::isalnum(c) || c == '\'' || c >= 0x80; }

// FNV-1a, 64 bits: the same seed for the same text on every platform.
std::uint64_t text_hash(const std::string& text) {
    std::uint64_t hash = 14695981039346656037ull;
    for (unsigned char c : text) {
        hash ^= c;
        hash *= 1099511628211ull;
    }
    return hash;
}

}  // namespace

std::vector<std::string> tokenize(const std::string& text) {
    std::vector<std::string> tokens;
    std::size_t i = 0;
    while (i < text.size()) {
        const unsigned char c = static_cast<unsigned char>(text[i]);
        if (std::isspace(c)) {
            ++i;
        } else if (is_word_byte(c)) {
            const std::size_t start = i;
            while (i < text.size() && is_word_byte(static_cast<unsigned char>(text[i]))) ++i;
            tokens.push_back(sanitized(text.substr(start, i - start)));
        } else {
            tokens.push_back(sanitized(text.substr(i++, 1)));
        }
    }
    if (tokens.empty()) throw Error("--text has no words or punctuation to attend over");
    return tokens;
}

bool needs_replacing(const std::string& text) {
    std::string spaced = text;  // whitespace separates tokens and is never shown
    for (char& c : spaced) {
        if (std::isspace(static_cast<unsigned char>(c))) c = ' ';
    }
    return sanitized(spaced) != spaced;
}

double encoding_frequency(std::size_t pair, std::size_t width) {
    return std::pow(10000.0, -2.0 * double(pair) / double(width));
}

Tensor positional_encoding(std::size_t positions, std::size_t width) {
    Tensor pe({positions, width});
    float* values = pe.data();
    for (std::size_t pos = 0; pos < positions; ++pos) {
        for (std::size_t pair = 0; pair < width / 2; ++pair) {
            const double angle = double(pos) * encoding_frequency(pair, width);
            values[pos * width + 2 * pair] = float(std::sin(angle));
            values[pos * width + 2 * pair + 1] = float(std::cos(angle));
        }
    }
    return pe;
}

std::vector<float> token_embedding(const std::string& token, std::size_t width) {
    std::string key = token;
    for (char& c : key) c = char(std::tolower(static_cast<unsigned char>(c)));
    Random random(text_hash(key), embedding_stream);
    std::vector<float> embedding(width);
    for (float& value : embedding) value = random.normal();
    return embedding;
}

Tensor text_input(const std::vector<std::string>& tokens, std::size_t d_model) {
    if (d_model == 0 || d_model % 4 != 0) {
        throw Error(
            "--text needs a d_model that is a multiple of 4 (half for the token, half "
            "for sin/cos position pairs), got " +
            std::to_string(d_model));
    }
    const std::size_t half = d_model / 2;
    const std::size_t n = tokens.size();
    const Tensor pe = positional_encoding(n, half);
    Tensor x({1, n, d_model});
    float* row = x.data();
    for (std::size_t pos = 0; pos < n; ++pos, row += d_model) {
        const std::vector<float> embedding = token_embedding(tokens[pos], half);
        for (std::size_t f = 0; f < half; ++f) {
            row[f] = embedding[f];
            row[half + f] = pe.data()[pos * half + f];
        }
    }
    return x;
}

}  // namespace mha
