// The stages run in order, the byte-level pre-tokenizer and decoder, and the token cache.

#include "tokenize/tokenizer.h"

#include "core/error.h"
#include "io/printable.h"
#include "tokenize/byte_level.h"
#include "tokenize/utf8.h"

#include <algorithm>

namespace mha::tokenizers {

namespace {

constexpr std::size_t cache_limit = 1 << 16;  // pieces kept; a text of all-new pieces stops adding

// Input bytes [begin, end) as the first stage sees them: each byte from itself (from the
// start of the text, the identity needs no table).
NormalizedText unnormalized(std::string_view text, std::size_t begin, std::size_t end) {
    NormalizedText n{std::string(text.substr(begin, end - begin)), {}};
    if (begin == 0) return n;
    n.source.resize(end - begin + 1);
    for (std::size_t i = 0; i <= end - begin; ++i) n.source[i] = begin + i;
    return n;
}

// A token appended to a whole result, or its id alone.
void append(std::vector<TokenPiece>& out, std::uint32_t id, const std::string& piece,
            std::size_t begin, std::size_t end) {
    out.push_back({id, piece, begin, end});
}

void append(std::vector<std::uint32_t>& out, std::uint32_t id, const std::string&, std::size_t,
            std::size_t) {
    out.push_back(id);
}

}  // namespace

std::size_t PreToken::end_source() const {
    if (!char_source.empty()) return char_source.back();
    const auto characters =
        std::count_if(text.begin(), text.end(), [](char c) { return (c & 0xC0) != 0x80; });
    return begin + static_cast<std::size_t>(characters);
}

ByteLevelPreTokenizer::ByteLevelPreTokenizer(Pattern pattern, bool add_prefix_space)
    : pattern_(pattern), add_prefix_space_(add_prefix_space) {}

std::string ByteLevelPreTokenizer::describe() const {
    return std::string("ByteLevel (add_prefix_space ") + (add_prefix_space_ ? "true" : "false") +
           "), split by the pattern " + pattern_text(pattern_) + ", then bytes to symbols";
}

void ByteLevelPreTokenizer::split_each(const NormalizedText& text,
                                       const std::function<void(PreToken&)>& take) const {
    const bool prefix = add_prefix_space_ && !text.text.empty() && text.text[0] != ' ';
    const std::string spaced = prefix ? " " + text.text : std::string();
    const std::string& whole = prefix ? spaced : text.text;
    // the prefix space comes from the input's byte 0, as the text after it does
    const auto source = [&](std::size_t at) {
        return prefix ? text.source_of(at == 0 ? 0 : at - 1) : text.source_of(at);
    };
    const bool each_byte_itself = !prefix && text.source.empty();
    PreToken piece{{}, {}, "", 0};  // one piece at a time, its buffers reused
    for_each_match(pattern_, whole, [&](const PatternPiece& match) {
        piece.text.clear();
        piece.char_source.clear();
        piece.branch = match.branch;
        piece.begin = match.begin;
        append_byte_symbols(piece.text,
                            std::string_view(whole).substr(match.begin, match.end - match.begin));
        if (!each_byte_itself) {
            for (std::size_t at = match.begin; at <= match.end; ++at)
                piece.char_source.push_back(source(at));
        }
        take(piece);
    });
}

std::vector<PreToken> ByteLevelPreTokenizer::split(const NormalizedText& text) const {
    std::vector<PreToken> pieces;
    split_each(text, [&pieces](PreToken& piece) { pieces.push_back(piece); });
    return pieces;
}

std::string ByteLevelDecoder::decode(const std::vector<std::string>& tokens) const {
    std::string bytes;
    for (const std::string& token : tokens) {
        std::string mapped;
        bool all_symbols = true;
        for (std::size_t at = 0; at < token.size() && all_symbols;) {
            const std::size_t length = utf8_length(token, at);
            const int b = length == 0 ? -1 : symbol_byte(utf8_code_point(token, at, length));
            if (b < 0) all_symbols = false;
            mapped += static_cast<char>(b);
            at += length;
        }
        bytes += all_symbols ? mapped : token;
    }
    return bytes;
}

Tokenizer::Tokenizer(TokenizerStages stages) : stages_(std::move(stages)), cache_(cache_limit) {}

template <typename Tokens>
void Tokenizer::encode_piece(const PreToken& piece, std::size_t index, Tokens& out,
                             TokenizeTrace* trace) const {
    if (piece.added_id >= 0) {
        append(out, static_cast<std::uint32_t>(piece.added_id), piece.text, piece.source(0),
               piece.end_source());
        return;
    }
    const Vocabulary& vocabulary = stages_.model->vocabulary();
    if (stages_.ignore_merges) {
        const std::int64_t whole = vocabulary.find(piece.text);
        if (whole >= 0) {
            if (trace) trace->whole.push_back(index);
            append(out, static_cast<std::uint32_t>(whole), piece.text, piece.source(0),
                   piece.end_source());
            return;
        }
    }
    const auto emit = [&](const auto* tokens, std::size_t count) {
        for (const auto* t = tokens; t != tokens + count; ++t) {
            append(out, t->id, vocabulary.token(t->id), piece.source(t->first),
                   piece.source(t->end));
        }
    };
    std::size_t count = 0;
    if (const PieceCache::Token* cached = trace ? nullptr : cache_.find(piece.text, count))
        return emit(cached, count);
    std::vector<ModelToken> fresh;
    if (trace) {
        std::vector<AppliedMerge> merges;
        std::vector<ByteFallback> fallbacks;
        stages_.model->tokenize(piece.text, fresh, &merges, &fallbacks);
        for (const AppliedMerge& m : merges) trace->merges.push_back({index, m});
        for (ByteFallback& f : fallbacks) trace->fallbacks.push_back({index, std::move(f)});
    } else {
        stages_.model->tokenize(piece.text, fresh);
        cache_.insert(piece.text, fresh);
    }
    emit(fresh.data(), fresh.size());
}

template <typename Tokens>
void Tokenizer::encode_stretch(std::string_view text, std::size_t begin, std::size_t end,
                               Tokens& out, std::vector<PreToken>& pieces,
                               TokenizeTrace* trace) const {
    if (begin == end) return;
    NormalizedText normalized = unnormalized(text, begin, end);
    if (stages_.normalizer)
        normalized = stages_.normalizer->normalize(std::move(normalized), trace);
    stages_.pre_tokenizer->split_each(normalized, [&](PreToken& piece) {
        encode_piece(piece, pieces.size(), out, trace);
        if (trace) pieces.push_back(piece);
    });
}

template <typename Tokens>
void Tokenizer::encode_text(std::string_view text, Tokens& tokens, TokenizeTrace* trace,
                            const std::string& what) const {
    check_utf8(text, what);
    tokens.reserve(text.size() / 4);  // about four bytes a token in English
    std::vector<PreToken> pieces;
    // added tokens first: the stretches between them go through the stages, each alone
    std::size_t stretch = 0;
    for (std::size_t at = 0; at < text.size() && !stages_.added.empty();) {
        const AddedMatch added = stages_.added.at(text, at, stretch);
        if (!added.token) {
            ++at;
            continue;
        }
        encode_stretch(text, stretch, added.begin, tokens, pieces, trace);
        append(tokens, added.token->id, added.token->content, added.begin, added.end);
        at = stretch = added.end;
    }
    encode_stretch(text, stretch, text.size(), tokens, pieces, trace);
    if (trace) {
        trace->pre_tokenizer = stages_.pre_tokenizer->describe();
        trace->pieces = std::move(pieces);
    }
}

std::vector<TokenPiece> Tokenizer::encode(std::string_view text, bool with_special,
                                          TokenizeTrace* trace, const std::string& what) const {
    std::vector<TokenPiece> tokens;
    encode_text(text, tokens, trace, what);
    if (stages_.post_processor) stages_.post_processor->process(tokens, with_special, trace);
    return tokens;
}

std::vector<std::uint32_t> Tokenizer::encode_ids(std::string_view text, bool with_special,
                                                 const std::string& what) const {
    std::vector<std::uint32_t> ids;
    encode_text(text, ids, nullptr, what);
    if (stages_.post_processor) stages_.post_processor->process(ids, with_special);
    return ids;
}

std::string Tokenizer::decode(const std::vector<std::uint32_t>& ids) const {
    const Vocabulary& vocabulary = stages_.model->vocabulary();
    std::vector<std::string> tokens;
    tokens.reserve(ids.size());
    for (const std::uint32_t id : ids) {
        const std::string* known = piece(id);
        tokens.push_back(known ? *known : vocabulary.token(id));  // token() throws for this id
    }
    if (stages_.decoder) return stages_.decoder->decode(tokens);
    std::string joined;
    for (const std::string& token : tokens) joined += token;
    return joined;
}

const std::string* Tokenizer::piece(std::uint32_t id) const {
    const Vocabulary& vocabulary = stages_.model->vocabulary();
    return vocabulary.has_id(id) ? &vocabulary.token(id) : stages_.added.content(id);
}

}  // namespace mha::tokenizers
