// Linear probing over a power-of-two table, doubled whenever it would pass half full.

#include "tokenize/piece_cache.h"

namespace mha::tokenizers {

namespace {

// bytes; a longer piece is tokenized each time (and the texts of the limit's pieces fit the
// entries' 32-bit offsets)
constexpr std::size_t longest_piece = 1 << 15;

std::uint64_t tag(std::uint64_t hash) { return hash & 0xFFFFFFFF00000000ull; }

}  // namespace

PieceCache::PieceCache(std::size_t limit) : limit_(limit) {}

std::size_t PieceCache::slot_of(std::string_view piece, std::uint64_t hash) const {
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t slot = hash & mask;; slot = (slot + 1) & mask) {
        const std::uint64_t s = slots_[slot];
        if (s == 0) return slot;
        if (tag(s) == tag(hash) && text_of(entries_[std::uint32_t(s) - 1]) == piece) return slot;
    }
}

const PieceCache::Token* PieceCache::find(std::string_view piece, std::size_t& count) const {
    if (slots_.empty()) return nullptr;
    const std::uint64_t s = slots_[slot_of(piece, text_hash(piece))];
    if (s == 0) return nullptr;
    const Entry& e = entries_[std::uint32_t(s) - 1];
    count = e.count;
    return tokens_.data() + e.first;
}

void PieceCache::insert(std::string_view piece, const std::vector<ModelToken>& tokens) {
    if (entries_.size() >= limit_ || piece.size() > longest_piece) return;
    if (2 * (entries_.size() + 1) > slots_.size()) grow();
    const std::uint64_t hash = text_hash(piece);
    const std::size_t slot = slot_of(piece, hash);
    if (slots_[slot] != 0) return;
    entries_.push_back({std::uint32_t(text_.size()), std::uint32_t(piece.size()),
                        std::uint32_t(tokens_.size()), std::uint32_t(tokens.size())});
    text_.append(piece);
    for (const ModelToken& t : tokens)
        tokens_.push_back({t.id, std::uint32_t(t.first), std::uint32_t(t.end)});
    slots_[slot] = tag(hash) | entries_.size();
}

void PieceCache::grow() {
    slots_.assign(slots_.empty() ? 1024 : 2 * slots_.size(), 0);
    for (std::size_t i = 0; i < entries_.size(); ++i) {
        const std::uint64_t hash = text_hash(text_of(entries_[i]));
        slots_[slot_of(text_of(entries_[i]), hash)] = tag(hash) | (i + 1);
    }
}

}  // namespace mha::tokenizers
