#pragma once
// mha train's data, as examples/models/train.py makes it: a UTF-8 corpus read as one token
// per character, its vocabulary, the held-out last 3%, and the batch of every step (windows
// of the corpus; 30% of the rows end in a random lowercase segment repeated to the row's end;
// 0.5% of the inputs replaced by the unknown token), a pure function of (seed, step).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mha {

// Token 0 (unknown) and at most this many characters: the most frequent when there are more.
inline constexpr std::size_t max_corpus_characters = 255;
inline constexpr double held_out_fraction = 0.03;  // the last 3% of the characters
inline constexpr double repeat_fraction = 0.3;     // rows ending in a repeated segment
inline constexpr double unknown_fraction = 0.005;  // inputs replaced by the unknown token

struct Corpus {
    std::vector<std::uint32_t> vocab;    // (V) code points; vocab[0] = 0, the unknown token
    std::vector<std::uint8_t> train;     // the first 97% of the characters, as tokens
    std::vector<std::uint8_t> held_out;  // the last 3%, as tokens
    std::vector<std::string> held_out_characters;  // the last 3%, each character as UTF-8
    std::size_t characters = 0;                    // in the whole corpus
    std::uint64_t fingerprint = 0;                 // FNV-1a of its bytes: resume checks it
};

// The corpus `text` read from `source` (a path or "the shipped corpus", for messages). Throws
// mha::Error for a text that is empty or looks binary (a NUL byte, or more than 10% of its
// characters not UTF-8); characters beyond the vocabulary's 255, and bytes that are not
// UTF-8, become the unknown token.
Corpus read_corpus(const std::string& text, const std::string& source);

// Throws mha::Error unless both parts hold more than `context` + 1 characters: a window of
// context inputs and their targets.
void check_corpus_fits(const Corpus& corpus, const std::string& source, std::size_t context);

struct Batch {
    std::vector<std::size_t> tokens;   // (B·N) inputs, row by row
    std::vector<std::size_t> targets;  // (B·N) the next character of each
};

// The batch of step `step` (from 0): `batch` random windows of context + 1 training tokens,
// the first round(0.3·batch) rows ending in a segment of 8-32 random lowercase letters (at
// most context / 2) repeated from a random place to the row's end, then 0.5% of the inputs
// replaced by the unknown token. Drawn from io/init.h's batch_stream of (seed, step) alone.
Batch training_batch(const Corpus& corpus, std::uint64_t seed, std::uint64_t step,
                     std::size_t batch, std::size_t context);

// `batch` random windows of held-out tokens, no segments and no noise: the fixed batch the
// held-out loss is measured on, drawn from io/init.h's evaluation_stream of (seed, 0).
Batch held_out_batch(const Corpus& corpus, std::uint64_t seed, std::size_t batch,
                     std::size_t context);

// The token of each lowercase letter a-z (the unknown token for one the corpus lacks).
std::vector<std::size_t> letter_tokens(const Corpus& corpus);

}  // namespace mha
