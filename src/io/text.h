#pragma once
// A sentence as attention input: tokens (words and punctuation), a deterministic
// embedding per token text, and Vaswani et al.'s sinusoidal positional encoding.
//
// Layout of one input row x_i (d_model features, d_model a multiple of 4):
//   x_i[0 .. d_model/2)        the token's embedding, zero in the other half
//   x_i[d_model/2 .. d_model)  the positional encoding of position i, zero in the first half
// so x_i = embedding + encoding, each in its own half (see docs/demo_heads.md).

#include "core/tensor/tensor.h"

#include <string>
#include <vector>

namespace mha {

// Words (runs of letters, digits, apostrophes and UTF-8 multibyte characters) and
// single punctuation marks; whitespace separates. Control bytes and invalid UTF-8 in a
// token become U+FFFD, so labels are safe on a terminal and in SVG, HTML and JSON.
// Throws mha::Error when there is no token.
std::vector<std::string> tokenize(const std::string& text);

// True when tokenize would replace something (to say so once on stderr).
bool needs_replacing(const std::string& text);

// Width of the positional half: d_model / 2. The i-th sin/cos pair uses the
// frequency 10000^(-2i / width).
double encoding_frequency(std::size_t pair, std::size_t width);

// PE(pos, 2i) = sin(pos·ω_i), PE(pos, 2i+1) = cos(pos·ω_i): (N, width).
Tensor positional_encoding(std::size_t positions, std::size_t width);

// A standard-normal vector of `width` values seeded by the token's text with
// ASCII letters lowered, so "The" and "the" share one vector.
std::vector<float> token_embedding(const std::string& token, std::size_t width);

// (1, N, d_model): token embeddings in the first half, positions in the second.
// Throws mha::Error unless d_model is a positive multiple of 4.
Tensor text_input(const std::vector<std::string>& tokens, std::size_t d_model);

}  // namespace mha
