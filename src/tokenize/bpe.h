#pragma once
// Byte-pair encoding: a vocabulary (token text <-> id) and merges by rank. A piece's symbols
// merge lowest rank first, left to right among equal ranks (all occurrences of a pair before
// the next rank, as OpenAI's encoder and Hugging Face's tokenizers do); every merge applied
// can be recorded for a trace.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
#include "tokenize/flat_tables.h"

namespace mha::tokenizers {

// Token texts and their ids, fixed once built.
class Vocabulary {
public:
    // entries: (token, id) in any order. source names the file for errors ("DIR/vocab.json").
    // Throws mha::Error when two tokens share an id.
    Vocabulary(std::vector<std::pair<std::string, std::uint32_t>> entries, std::string source);

    // The id of `token`, or -1.
    std::int64_t find(std::string_view token) const;
    // find of each of tokens[0, count) into ids, the lookups' memory fetched together.
    void find_all(const std::string_view* tokens, std::size_t count, std::int64_t* ids) const;
    // The token of `id`; throws mha::Error for an id the vocabulary does not have.
    const std::string& token(std::uint32_t id) const;
    bool has_id(std::uint32_t id) const;
    std::size_t size() const { return count_; }
    const std::string& source() const { return source_; }

private:
    std::vector<std::string> tokens_;  // by id; "" (with present_ false) where an id is missing
    std::vector<bool> present_;
    TokenIndex index_;
    // the id of each one-character token below U+0400 (GPT-2's byte symbols among them), or -1:
    // found without hashing
    std::vector<std::int32_t> small_characters_;
    std::size_t count_ = 0;
    std::string source_;
};

// A merge as its file writes it: the two symbols.
struct MergeText {
    std::string_view left, right;
};

// One merge applied to a piece: its left and right symbols' ids, the result's id, the rank.
struct AppliedMerge {
    std::uint32_t left, right, result;
    std::size_t rank;
};

// A token of a piece: its id and the characters [first, end) of the piece it covers.
struct ModelToken {
    std::uint32_t id;
    std::size_t first, end;
};

// What BPE does with a character the vocabulary lacks.
struct BpeOptions {
    bool byte_fallback = false;  // its UTF-8 bytes as <0xNN> tokens (SentencePiece style)
    std::int64_t unk_id = -1;    // else (or with a byte token missing) this token; -1: refuse
    bool fuse_unk = false;       // consecutive unknown characters as one unknown token
};

// A character byte fallback replaced, for a trace: the piece's character index and the ids.
struct ByteFallback {
    std::size_t character;
    std::vector<std::uint32_t> ids;
};

class BpeModel {
public:
    BpeModel(Vocabulary vocabulary, BpeOptions options = {});

    // Adds the merge of the next rank (0 first). where() names its line for errors ("DIR/merges.txt
    // line 7"); throws mha::Error when a symbol or the result is not in the vocabulary.
    void add_merge(std::string_view left, std::string_view right,
                   const std::function<std::string()>& where);
    // The same for each of merges in order (where(i) names merges[i]), stopping at the first
    // error; the vocabulary's lookups overlap in memory, which 50,000 merges need to load fast.
    void add_merges(const std::vector<MergeText>& merges,
                    const std::function<std::string(std::size_t)>& where);
    // Room for `count` merges in all, when the caller knows how many come.
    void reserve_merges(std::size_t count) { rules_.reserve(count); }

    // The tokens of one piece (text in the vocabulary's alphabet, e.g. GPT-2's byte symbols),
    // appended to `out`. Each character starts as its own symbol; one the vocabulary lacks
    // becomes its bytes' <0xNN> tokens with byte_fallback, else throws mha::Error naming it.
    // merges and fallbacks, when given, receive every merge applied and every fallback.
    void tokenize(std::string_view piece, std::vector<ModelToken>& out,
                  std::vector<AppliedMerge>* merges = nullptr,
                  std::vector<ByteFallback>* fallbacks = nullptr) const;

    const Vocabulary& vocabulary() const { return vocabulary_; }

private:
    struct Symbol {
        std::uint32_t id;
        std::size_t first, end;  // characters of the piece
    };
    bool has_byte_tokens(std::string_view character) const;  // all its bytes' <0xNN>
    void initial_symbols(std::string_view piece, std::vector<Symbol>& symbols,
                         std::vector<ByteFallback>* fallbacks) const;
    void merge_symbols(std::vector<Symbol>& symbols, std::vector<AppliedMerge>* merges) const;

    Vocabulary vocabulary_;
    BpeOptions options_;
    PairTable rules_;
    std::string joined_;  // add_merges' buffer for the results' texts
    std::size_t merge_count_ = 0;
};

}  // namespace mha::tokenizers
