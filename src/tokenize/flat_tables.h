#pragma once
// Open-addressing hash tables for the two lookups a BPE tokenizer makes most, a token's id
// and a pair's merge rule: one flat array each, no node per entry, so that loading GPT-2's
// 50,257 tokens and 50,000 merges and looking them up stays fast.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace mha::tokenizers {

// A hash of a short text, eight bytes at a time (tokens and pieces are a few bytes long).
std::uint64_t text_hash(std::string_view text);

// Token text -> id, over token strings kept by the caller (tokens[id]).
class TokenIndex {
public:
    TokenIndex() = default;  // finds nothing
    // Indexes tokens[id] for each id with present[id]; the strings must outlive the index.
    TokenIndex(const std::vector<std::string>& tokens, const std::vector<bool>& present);

    // The id of `token`, or -1.
    std::int64_t find(std::string_view token, const std::vector<std::string>& tokens) const;
    // find of each of keys[0, count) into ids: a group's slots, then its tokens, fetched from
    // memory together before any is compared, so that their cache misses overlap.
    void find_all(const std::string_view* keys, std::size_t count,
                  const std::vector<std::string>& tokens, std::int64_t* ids) const;

private:
    // The id of `token` whose text_hash is h, or -1.
    std::int64_t probe(std::string_view token, std::uint64_t h,
                       const std::vector<std::string>& tokens) const;

    // the token's hash in the high 32 bits (compared before the text), id + 1 in the low 32;
    // 0: empty
    std::vector<std::uint64_t> slots_ = std::vector<std::uint64_t>(16, 0);
    std::size_t mask_ = 15;
};

// (left id, right id) -> (rank, result id); a pair added twice keeps its first entry.
class PairTable {
public:
    struct Entry {
        std::uint64_t key = 0;
        std::uint32_t rank = empty, result = 0;
    };
    static constexpr std::uint32_t empty = 0xFFFFFFFF;

    void insert(std::uint32_t left, std::uint32_t right, std::uint32_t rank, std::uint32_t result);
    // Room for `count` entries without growing.
    void reserve(std::size_t count);
    // The entry of the pair, or nullptr.
    const Entry* find(std::uint32_t left, std::uint32_t right) const;

private:
    void grow();
    void rehash(std::size_t size);  // a power of two above twice the entries
    std::vector<Entry> slots_;
    std::size_t used_ = 0;
};

}  // namespace mha::tokenizers
