// Linear probing over power-of-two tables kept at most half full.

#include "tokenize/flat_tables.h"

#include <algorithm>
#include <cstring>

namespace mha::tokenizers {

namespace {

std::size_t table_size(std::size_t entries) {
    std::size_t size = 16;
    while (size < 2 * entries) size *= 2;
    return size;
}

std::size_t pair_hash(std::uint64_t key) { return (key * 0x9E3779B97F4A7C15ull) >> 20; }

std::uint64_t pair_key(std::uint32_t left, std::uint32_t right) {
    return (std::uint64_t(left) << 32) | right;
}

}  // namespace

std::uint64_t text_hash(std::string_view text) {
    std::uint64_t h = 0x9E3779B97F4A7C15ull ^ text.size();
    std::size_t at = 0;
    for (; at + 8 <= text.size(); at += 8) {
        std::uint64_t word;
        std::memcpy(&word, text.data() + at, 8);
        h = (h ^ word) * 0xFF51AFD7ED558CCDull;
        h ^= h >> 32;
    }
    std::uint64_t tail = 0;
    if (at < text.size()) std::memcpy(&tail, text.data() + at, text.size() - at);
    h = (h ^ tail) * 0xC4CEB9FE1A85EC53ull;
    return h ^ (h >> 29);
}

TokenIndex::TokenIndex(const std::vector<std::string>& tokens, const std::vector<bool>& present) {
    std::size_t count = 0;
    for (const bool p : present) count += p;
    slots_.assign(table_size(count), 0);
    mask_ = slots_.size() - 1;
    for (std::size_t id = 0; id < tokens.size(); ++id) {
        if (!present[id]) continue;
        const std::uint64_t h = text_hash(tokens[id]);
        std::size_t slot = h & mask_;
        while (slots_[slot] != 0) slot = (slot + 1) & mask_;
        slots_[slot] = (h & 0xFFFFFFFF00000000ull) | (id + 1);
    }
}

std::int64_t TokenIndex::find(std::string_view token,
                              const std::vector<std::string>& tokens) const {
    return probe(token, text_hash(token), tokens);
}

void TokenIndex::find_all(const std::string_view* keys, std::size_t count,
                          const std::vector<std::string>& tokens, std::int64_t* ids) const {
    constexpr std::size_t group = 32;  // lookups whose memory is fetched at once
    std::uint64_t hashes[group];
    for (std::size_t first = 0; first < count; first += group) {
        const std::size_t n = std::min(group, count - first);
        for (std::size_t i = 0; i < n; ++i) {
            hashes[i] = text_hash(keys[first + i]);
            __builtin_prefetch(&slots_[hashes[i] & mask_]);
        }
        for (std::size_t i = 0; i < n; ++i) {  // the token the first slot names, if its hash fits
            const std::uint64_t entry = slots_[hashes[i] & mask_];
            if (entry != 0 && (entry >> 32) == (hashes[i] >> 32))
                __builtin_prefetch(&tokens[static_cast<std::uint32_t>(entry) - 1]);
        }
        for (std::size_t i = 0; i < n; ++i) ids[first + i] = probe(keys[first + i], hashes[i], tokens);
    }
}

std::int64_t TokenIndex::probe(std::string_view token, std::uint64_t h,
                               const std::vector<std::string>& tokens) const {
    for (std::size_t slot = h & mask_;; slot = (slot + 1) & mask_) {
        const std::uint64_t entry = slots_[slot];
        if (entry == 0) return -1;
        const std::uint32_t id = static_cast<std::uint32_t>(entry) - 1;
        if ((entry >> 32) == (h >> 32) && tokens[id] == token) return id;
    }
}

void PairTable::insert(std::uint32_t left, std::uint32_t right, std::uint32_t rank,
                       std::uint32_t result) {
    if (2 * (used_ + 1) > slots_.size()) grow();
    const std::uint64_t key = pair_key(left, right);
    const std::size_t mask = slots_.size() - 1;
    std::size_t slot = pair_hash(key) & mask;
    while (slots_[slot].rank != empty) {
        if (slots_[slot].key == key) return;
        slot = (slot + 1) & mask;
    }
    slots_[slot] = {key, rank, result};
    ++used_;
}

const PairTable::Entry* PairTable::find(std::uint32_t left, std::uint32_t right) const {
    if (slots_.empty()) return nullptr;
    const std::uint64_t key = pair_key(left, right);
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t slot = pair_hash(key) & mask;; slot = (slot + 1) & mask) {
        const Entry& e = slots_[slot];
        if (e.rank == empty) return nullptr;
        if (e.key == key) return &e;
    }
}

void PairTable::reserve(std::size_t count) {
    if (2 * count > slots_.size()) rehash(table_size(count));
}

void PairTable::grow() { rehash(slots_.empty() ? 16 : 2 * slots_.size()); }

void PairTable::rehash(std::size_t size) {
    const std::vector<Entry> old = std::move(slots_);
    slots_.assign(size, Entry{});
    used_ = 0;
    for (const Entry& e : old) {
        if (e.rank != empty)
            insert(std::uint32_t(e.key >> 32), std::uint32_t(e.key), e.rank, e.result);
    }
}

}  // namespace mha::tokenizers
