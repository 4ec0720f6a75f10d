#pragma once
// What `mha tokenize` prints: the tokens (id, byte span, piece, the text they came from),
// the ids alone for scripts, and the trace of every stage in order.

#include "tokenize/tokenizer.h"

#include <ostream>
#include <string_view>
#include <vector>

namespace mha {

// One line per token: id, byte span, piece and its input bytes, made printable.
void print_tokens(std::ostream& out, std::string_view text,
                  const std::vector<tokenizers::TokenPiece>& tokens);

// The ids, space-separated, on one line.
void print_ids(std::ostream& out, const std::vector<std::uint32_t>& ids);

// The stages in order: normalizer, pre-tokenizer pieces with their branch, bytes as symbols,
// every merge with its rank, byte fallback, special tokens added. with_special false says
// the specials were left out by --no-special.
void print_tokenize_trace(std::ostream& out, std::string_view text,
                          const tokenizers::TokenizeTrace& trace,
                          const tokenizers::Vocabulary& vocabulary, bool with_special);

}  // namespace mha
