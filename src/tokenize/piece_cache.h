#pragma once
// The tokens of pieces seen before, so that a long text runs BPE once per distinct piece:
// one flat hash table over a list of entries and one array of their tokens, bounded.

#include "tokenize/bpe.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mha::tokenizers {

class PieceCache {
public:
    // Keeps at most `limit` pieces; past it, insert does nothing.
    explicit PieceCache(std::size_t limit);

    // The cached tokens of `piece` ([first, first + count)), or nullptr when it has none.
    const ModelToken* find(std::string_view piece, std::size_t& count) const;
    void insert(std::string_view piece, const std::vector<ModelToken>& tokens);

private:
    struct Entry {
        std::string piece;
        std::size_t first, count;  // into tokens_
    };
    std::size_t slot_of(std::string_view piece) const;  // its slot, or the empty one it would take

    std::size_t limit_;
    std::vector<std::uint32_t> slots_;  // entry index + 1, or 0: empty
    std::vector<Entry> entries_;
    std::vector<ModelToken> tokens_;
};

}  // namespace mha::tokenizers
