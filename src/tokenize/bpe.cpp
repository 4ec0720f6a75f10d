// The vocabulary's index, the merge rules and the merging of one piece's symbols.

#include "tokenize/bpe.h"

#include "core/error.h"
#include "io/printable.h"

#include <cstdio>
#include <queue>

namespace mha::tokenizers {

namespace {

std::string quoted(std::string_view text) { return "'" + escaped(text) + "'"; }

std::string byte_token(unsigned char b) {
    char text[8];
    std::snprintf(text, sizeof text, "<0x%02X>", b);
    return text;
}

constexpr std::int32_t small_character_limit = 0x400;

// The code point of a token that is one character below small_character_limit, or -1.
std::int32_t small_character(std::string_view token) {
    const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(token[i]); };
    if (token.size() == 1 && byte(0) < 0x80) return byte(0);
    if (token.size() != 2 || byte(0) < 0xC2 || byte(0) > 0xDF || (byte(1) & 0xC0) != 0x80)
        return -1;
    const std::int32_t code = ((byte(0) & 0x1F) << 6) | (byte(1) & 0x3F);
    return code < small_character_limit ? code : -1;
}

}  // namespace

Vocabulary::Vocabulary(std::vector<std::pair<std::string, std::uint32_t>> entries,
                       std::string source)
    : source_(std::move(source)) {
    std::uint32_t max = 0;
    for (const auto& entry : entries) max = std::max(max, entry.second);
    tokens_.resize(entries.empty() ? 0 : std::size_t(max) + 1);
    present_.resize(tokens_.size());
    for (auto& [token, id] : entries) {
        if (present_[id]) {
            throw Error(source_ + ": id " + std::to_string(id) + " is given to both " +
                        quoted(tokens_[id]) + " and " + quoted(token));
        }
        tokens_[id] = std::move(token);
        present_[id] = true;
        ++count_;
    }
    index_ = TokenIndex(tokens_, present_);
    small_characters_.assign(small_character_limit, -1);
    for (std::uint32_t id = 0; id < tokens_.size(); ++id) {
        const std::int32_t code = present_[id] ? small_character(tokens_[id]) : -1;
        if (code >= 0) small_characters_[code] = static_cast<std::int32_t>(id);
    }
}

std::int64_t Vocabulary::find(std::string_view token) const {
    const std::int32_t code = small_character(token);
    if (code >= 0) return small_characters_[code];
    return index_.find(token, tokens_);
}

void Vocabulary::find_all(const std::string_view* tokens, std::size_t count,
                          std::int64_t* ids) const {
    index_.find_all(tokens, count, tokens_, ids);
    for (std::size_t i = 0; i < count; ++i) {  // as find: the small characters by their table
        const std::int32_t code = small_character(tokens[i]);
        if (code >= 0) ids[i] = small_characters_[code];
    }
}

bool Vocabulary::has_id(std::uint32_t id) const { return id < present_.size() && present_[id]; }

const std::string& Vocabulary::token(std::uint32_t id) const {
    if (!has_id(id)) {
        throw Error("token id " + std::to_string(id) + " is not in " + source_ + " (" +
                    std::to_string(count_) + " tokens, ids up to " +
                    std::to_string(tokens_.empty() ? 0 : tokens_.size() - 1) + ")");
    }
    return tokens_[id];
}

BpeModel::BpeModel(Vocabulary vocabulary, BpeOptions options)
    : vocabulary_(std::move(vocabulary)), options_(options) {}

void BpeModel::add_merge(std::string_view left, std::string_view right,
                         const std::function<std::string()>& where) {
    add_merges({{left, right}}, [&](std::size_t) { return where(); });
}

void BpeModel::add_merges(const std::vector<MergeText>& merges,
                          const std::function<std::string(std::size_t)>& where) {
    constexpr std::size_t group = 256;  // merges whose lookups are made together
    std::vector<std::string_view> texts;  // per merge: left, right, the result
    std::vector<std::int64_t> ids;
    for (std::size_t first = 0; first < merges.size(); first += group) {
        const std::size_t n = std::min(group, merges.size() - first);
        joined_.clear();
        for (std::size_t i = first; i < first + n; ++i)
            joined_.append(merges[i].left).append(merges[i].right);
        texts.clear();
        for (std::size_t i = first, at = 0; i < first + n; ++i) {
            const std::size_t length = merges[i].left.size() + merges[i].right.size();
            texts.insert(texts.end(), {merges[i].left, merges[i].right,
                                       std::string_view(joined_).substr(at, length)});
            at += length;
        }
        ids.resize(texts.size());
        vocabulary_.find_all(texts.data(), texts.size(), ids.data());
        for (std::size_t k = 0; k < texts.size(); ++k) {
            const MergeText& merge = merges[first + k / 3];
            if (ids[k] < 0) {
                throw Error(where(first + k / 3) + ": the merge " +
                            quoted(std::string(merge.left) + " " + std::string(merge.right)) +
                            " has " + (k % 3 == 2 ? "the result" : "the symbol") + " " +
                            quoted(texts[k]) + ", which " + vocabulary_.source() +
                            " does not have");
            }
            if (k % 3 != 2) continue;
            const auto rank = static_cast<std::uint32_t>(merge_count_++);
            // a repeated pair keeps its first rank
            rules_.insert(std::uint32_t(ids[k - 2]), std::uint32_t(ids[k - 1]), rank,
                          std::uint32_t(ids[k]));
        }
    }
}

bool BpeModel::has_byte_tokens(std::string_view character) const {
    for (const char b : character) {
        if (vocabulary_.find(byte_token(static_cast<unsigned char>(b))) < 0) return false;
    }
    return true;
}

void BpeModel::initial_symbols(std::string_view piece, std::vector<Symbol>& symbols,
                               std::vector<ByteFallback>* fallbacks) const {
    std::size_t character = 0;
    for (std::size_t at = 0; at < piece.size(); ++character) {
        std::size_t length = utf8_length(piece, at);
        if (length == 0) length = 1;  // the pieces are valid UTF-8; never stall
        const std::string_view text = piece.substr(at, length);
        const std::int64_t id = vocabulary_.find(text);
        if (id >= 0) {
            symbols.push_back({static_cast<std::uint32_t>(id), character, character + 1});
        } else if (options_.byte_fallback && has_byte_tokens(text)) {
            ByteFallback fallback{character, {}};
            for (const char b : text) {
                const auto byte_id = static_cast<std::uint32_t>(
                    vocabulary_.find(byte_token(static_cast<unsigned char>(b))));
                symbols.push_back({byte_id, character, character + 1});
                fallback.ids.push_back(byte_id);
            }
            if (fallbacks) fallbacks->push_back(std::move(fallback));
        } else if (options_.unk_id >= 0) {  // Hugging Face's unk_token (fuse_unk: one per run)
            const auto unk = static_cast<std::uint32_t>(options_.unk_id);
            if (options_.fuse_unk && !symbols.empty() && symbols.back().id == unk &&
                symbols.back().end == character)
                symbols.back().end = character + 1;
            else
                symbols.push_back({unk, character, character + 1});
        } else if (options_.byte_fallback) {
            throw Error(
                "the character " + quoted(text) + " is not in " + vocabulary_.source() +
                ", nor are all its byte tokens (<0xNN>), and the tokenizer has no unknown token");
        } else {
            throw Error("the symbol " + quoted(text) + " is not in " + vocabulary_.source() +
                        ", and the tokenizer has no byte fallback");
        }
        at += length;
    }
}

// Lowest rank first, leftmost first among equal ranks: a heap of candidate pairs, each checked
// against the symbols when popped (a merge next to it may have changed them since).
void BpeModel::merge_symbols(std::vector<Symbol>& symbols,
                             std::vector<AppliedMerge>* merges) const {
    const std::size_t n = symbols.size();
    if (n < 2) return;
    std::vector<std::size_t> next(n), prev(n);
    std::vector<bool> alive(n, true);
    for (std::size_t i = 0; i < n; ++i) next[i] = i + 1, prev[i] = i - 1;  // prev[0] unused
    struct Candidate {
        std::uint32_t rank;
        std::size_t left;  // the left symbol's index
        std::uint32_t left_id, right_id;
        bool operator>(const Candidate& o) const {
            return rank != o.rank ? rank > o.rank : left > o.left;
        }
    };
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
    const auto consider = [&](std::size_t left) {
        if (next[left] >= n) return;
        const std::uint32_t a = symbols[left].id, b = symbols[next[left]].id;
        if (const PairTable::Entry* r = rules_.find(a, b)) heap.push({r->rank, left, a, b});
    };
    for (std::size_t i = 0; i + 1 < n; ++i) consider(i);
    while (!heap.empty()) {
        const Candidate c = heap.top();
        heap.pop();
        const std::size_t right = next[c.left];
        if (!alive[c.left] || right >= n || symbols[c.left].id != c.left_id ||
            symbols[right].id != c.right_id)
            continue;
        const PairTable::Entry& r = *rules_.find(c.left_id, c.right_id);
        if (merges) merges->push_back({c.left_id, c.right_id, r.result, r.rank});
        symbols[c.left].id = r.result;
        symbols[c.left].end = symbols[right].end;
        alive[right] = false;
        next[c.left] = next[right];
        if (next[right] < n) prev[next[right]] = c.left;
        if (c.left > 0 && alive[prev[c.left]]) consider(prev[c.left]);
        consider(c.left);
    }
    std::size_t kept = 0;
    for (std::size_t i = 0; i < n; ++i) {
        if (alive[i]) symbols[kept++] = symbols[i];
    }
    symbols.resize(kept);
}

void BpeModel::tokenize(std::string_view piece, std::vector<ModelToken>& out,
                        std::vector<AppliedMerge>* merges,
                        std::vector<ByteFallback>* fallbacks) const {
    std::vector<Symbol> symbols;
    initial_symbols(piece, symbols, fallbacks);
    merge_symbols(symbols, merges);
    for (const Symbol& s : symbols) out.push_back({s.id, s.first, s.end});
}

}  // namespace mha::tokenizers
