// Linear probing over a table sized once for the bound (kept at most half full).

#include "tokenize/piece_cache.h"

namespace mha::tokenizers {

PieceCache::PieceCache(std::size_t limit) : limit_(limit) {}

std::size_t PieceCache::slot_of(std::string_view piece) const {
    const std::size_t mask = slots_.size() - 1;
    std::size_t slot = text_hash(piece) & mask;
    while (slots_[slot] != 0 && entries_[slots_[slot] - 1].piece != piece) slot = (slot + 1) & mask;
    return slot;
}

const ModelToken* PieceCache::find(std::string_view piece, std::size_t& count) const {
    if (slots_.empty()) return nullptr;
    const std::uint32_t entry = slots_[slot_of(piece)];
    if (entry == 0) return nullptr;
    const Entry& e = entries_[entry - 1];
    count = e.count;
    return tokens_.data() + e.first;
}

void PieceCache::insert(std::string_view piece, const std::vector<ModelToken>& tokens) {
    if (entries_.size() >= limit_) return;
    if (slots_.empty()) {
        std::size_t size = 16;
        while (size < 2 * limit_) size *= 2;
        slots_.assign(size, 0);
    }
    const std::size_t slot = slot_of(piece);
    if (slots_[slot] != 0) return;
    entries_.push_back({std::string(piece), tokens_.size(), tokens.size()});
    tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
    slots_[slot] = static_cast<std::uint32_t>(entries_.size());
}

}  // namespace mha::tokenizers
