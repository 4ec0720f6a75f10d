#pragma once
// The tokens of pieces seen before, so that a long text runs BPE once per distinct piece: a
// flat hash table that grows with the entries (so that a text's few thousand words keep it
// small enough for the processor's cache), the pieces' texts end to end, and their tokens.

#include "tokenize/bpe.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mha::tokenizers {

class PieceCache {
public:
    // A cached token: its id and the characters [first, end) of its piece.
    struct Token {
        std::uint32_t id, first, end;
    };

    // Keeps at most `limit` pieces; past it, insert does nothing.
    explicit PieceCache(std::size_t limit);

    // The cached tokens of `piece` ([first, first + count)), or nullptr when it has none.
    const Token* find(std::string_view piece, std::size_t& count) const;
    // Remembers the tokens of `piece` (not a piece too long to be worth keeping).
    void insert(std::string_view piece, const std::vector<ModelToken>& tokens);

private:
    struct Entry {
        std::uint32_t text, size;    // the piece: text_[text, text + size)
        std::uint32_t first, count;  // its tokens: tokens_[first, first + count)
    };
    std::string_view text_of(const Entry& e) const { return std::string_view(text_).substr(e.text, e.size); }
    // Its slot, or the empty one it would take; hash is text_hash(piece).
    std::size_t slot_of(std::string_view piece, std::uint64_t hash) const;
    void grow();

    std::size_t limit_;
    // the piece's hash in the high 32 bits (compared before the text), entry index + 1 in the
    // low 32; 0: empty. Kept at most half full.
    std::vector<std::uint64_t> slots_;
    std::vector<Entry> entries_;
    std::string text_;
    std::vector<Token> tokens_;
};

}  // namespace mha::tokenizers
