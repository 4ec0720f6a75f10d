#pragma once
// A tokenizer as Hugging Face's tokenizers build one, in stages: normalizer -> pre-tokenizer
// -> model (BPE) -> post-processor, and a decoder for the way back. Each stage is an
// interface with one job; a tokenizer file says which stages it uses (GPT-2's folder: no
// normalizer, the byte-level pre-tokenizer with GPT-2's pattern, BPE, no post-processor, the
// byte-level decoder). A trace, when asked for, records what every stage did.

#include "tokenize/added_tokens.h"
#include "tokenize/bpe.h"
#include "tokenize/patterns.h"
#include "tokenize/piece_cache.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace mha::tokenizers {

// One token of the result: its id, its token text (as the vocabulary writes it: "Ġworld")
// and the bytes [begin, end) of the input it came from (begin == end for an added special).
struct TokenPiece {
    std::uint32_t id;
    std::string piece;
    std::size_t begin, end;
};

// Text between stages: its bytes, and for each byte (and the end) the input byte it came from.
struct NormalizedText {
    std::string text;
    std::vector<std::size_t> source;  // text.size() + 1 entries, or none: each byte is itself

    std::size_t source_of(std::size_t byte) const { return source.empty() ? byte : source[byte]; }
};

// A piece the pre-tokenizer hands the model: text in the model's alphabet (GPT-2: byte
// symbols), and for each of its characters (and the end) the input byte it came from.
struct PreToken {
    std::string text;
    std::vector<std::size_t> char_source;  // characters + 1 entries, or none: see begin
    const char* branch;                    // the pattern branch that matched it, or ""
    std::size_t begin = 0;       // without char_source, character k came from input byte begin + k
    std::int64_t added_id = -1;  // an added token found in the normalized text: its id, no BPE

    std::size_t source(std::size_t character) const {
        return char_source.empty() ? begin + character : char_source[character];
    }
    std::size_t end_source() const;  // the input byte after its last character
};

// What each stage did, in order, for `mha tokenize --trace`.
struct TokenizeTrace {
    struct Normalized {
        std::string name;  // "NFC", "Prepend('▁')"
        std::string text;  // the text after it
    };
    struct Merge {
        std::size_t piece;  // index into pieces
        AppliedMerge merge;
    };
    struct Fallback {
        std::size_t piece;
        ByteFallback fallback;
    };
    struct Special {
        std::size_t position;  // its index in the final tokens
        std::uint32_t id;
        std::string piece;
    };
    std::vector<Normalized> normalizers;
    std::string pre_tokenizer;  // its description: "ByteLevel, pattern '...'"
    std::vector<PreToken> pieces;
    std::vector<Merge> merges;
    std::vector<Fallback> fallbacks;
    std::vector<Special> specials;
    std::vector<std::size_t> whole;  // pieces ignore_merges took whole from the vocabulary
};

class Normalizer {
public:
    virtual ~Normalizer() = default;
    // The text after this normalizer; trace, when given, records it (a Sequence records each).
    virtual NormalizedText normalize(NormalizedText text, TokenizeTrace* trace) const = 0;
};

class PreTokenizer {
public:
    virtual ~PreTokenizer() = default;
    virtual std::string describe() const = 0;
    virtual std::vector<PreToken> split(const NormalizedText& text) const = 0;
    // The same pieces handed to `take` one at a time (a pre-tokenizer that can stream them
    // overrides this, so that a long text never holds all its pieces at once).
    virtual void split_each(const NormalizedText& text,
                            const std::function<void(PreToken&)>& take) const {
        for (PreToken& piece : split(text)) take(piece);
    }
};

class PostProcessor {
public:
    virtual ~PostProcessor() = default;
    // Adds its special tokens (with_special false: none), recording them in the trace.
    virtual void process(std::vector<TokenPiece>& tokens, bool with_special,
                         TokenizeTrace* trace) const = 0;
    // The same for the ids alone.
    virtual void process(std::vector<std::uint32_t>& ids, bool with_special) const = 0;
};

class Decoder {
public:
    virtual ~Decoder() = default;
    // The bytes the tokens stand for (not necessarily valid UTF-8 for an arbitrary id list).
    virtual std::string decode(const std::vector<std::string>& tokens) const = 0;
};

// GPT-2's pre-tokenizer (Hugging Face's ByteLevel): split by the pattern, then each piece's
// bytes mapped to byte symbols. add_prefix_space puts a space before text not starting with one.
class ByteLevelPreTokenizer : public PreTokenizer {
public:
    ByteLevelPreTokenizer(Pattern pattern, bool add_prefix_space);
    std::string describe() const override;
    std::vector<PreToken> split(const NormalizedText& text) const override;
    void split_each(const NormalizedText& text,
                    const std::function<void(PreToken&)>& take) const override;

private:
    Pattern pattern_;
    bool add_prefix_space_;
};

// The byte-level decoder: byte symbols back to bytes (a token with another character stays as
// it is written, as Hugging Face's does).
class ByteLevelDecoder : public Decoder {
public:
    std::string decode(const std::vector<std::string>& tokens) const override;
};

// The stages of a tokenizer; a null normalizer, post-processor or decoder is "none".
struct TokenizerStages {
    std::string source;  // what it was read from: "DIR (vocab.json + merges.txt)"
    std::unique_ptr<Normalizer> normalizer;
    std::unique_ptr<PreTokenizer> pre_tokenizer;
    std::unique_ptr<BpeModel> model;
    std::unique_ptr<PostProcessor> post_processor;
    std::unique_ptr<Decoder> decoder;
    AddedTokens added;           // split out of the text before the normalizer (tokenizer.json)
    bool ignore_merges = false;  // a piece the vocabulary has whole is one token (Llama 3)
    // What encoding (with its trace) needs per byte of text at most: the tokens and the pieces
    // that stand for it; more when a normalizer copies the text or BPE takes it as one piece.
    std::uint64_t bytes_per_text_byte = 96;
};

class Tokenizer {
public:
    explicit Tokenizer(TokenizerStages stages);

    // The tokens of valid UTF-8 text (throws mha::Error at an invalid byte, naming `what`),
    // with the post-processor's special tokens when with_special. A trace, when given,
    // receives every stage's work (and the encoding then bypasses the cache).
    std::vector<TokenPiece> encode(std::string_view text, bool with_special,
                                   TokenizeTrace* trace = nullptr,
                                   const std::string& what = "the text") const;
    // The ids encode gives, without the pieces' texts and spans (mha tokenize --ids): a long
    // text's tokens then take 4 bytes each, not a TokenPiece.
    std::vector<std::uint32_t> encode_ids(std::string_view text, bool with_special,
                                          const std::string& what = "the text") const;

    // The bytes the ids stand for; throws mha::Error for an id not in the vocabulary.
    std::string decode(const std::vector<std::uint32_t>& ids) const;
    // The token text of id as the vocabulary or the added tokens write it ("Ġworld", "<s>"),
    // or nullptr for an id the tokenizer does not have.
    const std::string* piece(std::uint32_t id) const;

    const TokenizerStages& stages() const { return stages_; }

private:
    // The stages before the post-processor, their tokens appended to out (a vector of
    // TokenPiece or of ids).
    template <typename Tokens>
    void encode_text(std::string_view text, Tokens& out, TokenizeTrace* trace,
                     const std::string& what) const;
    template <typename Tokens>
    void encode_stretch(std::string_view text, std::size_t begin, std::size_t end, Tokens& out,
                        std::vector<PreToken>& pieces, TokenizeTrace* trace) const;
    template <typename Tokens>
    void encode_piece(const PreToken& piece, std::size_t index, Tokens& out,
                      TokenizeTrace* trace) const;

    TokenizerStages stages_;
    mutable PieceCache cache_;  // encode is not thread-safe
};

}  // namespace mha::tokenizers
