// Reading tokenizer.json: the model (BPE), the added tokens, the normalizer, the pre-tokenizer,
// the post-processor and the decoder, each type we implement by name and the rest refused.

#include "tokenize/tokenizer_json_read.h"

#include "core/checked.h"
#include "io/json.h"
#include "io/read_file.h"
#include "tokenize/aligned_text.h"
#include "tokenize/decoders.h"
#include "tokenize/normalizers.h"
#include "tokenize/post_processors.h"
#include "tokenize/pre_tokenizers.h"

#include <filesystem>
#include <utility>

namespace mha::tokenizers {

namespace {

using json::Value;
using json::Where;

// The member `key`, or nullptr when it is absent or null.
const Value* present(const Value& object, const std::string& key) {
    const Value* value = object.find(key);
    return value && value->kind != json::Kind::null ? value : nullptr;
}

bool flag(const Value& object, const std::string& key, bool otherwise, const Where& where) {
    const Value* value = present(object, key);
    return value ? json::as_bool(*value, where.at(key)) : otherwise;
}

const Value& required(const Value& object, const std::string& key, const Where& where) {
    const Value* value = object.find(key);
    if (!value) json::refuse(where, object, "expected the key \"" + key + "\"");
    return *value;
}

const std::string& type_of(const Value& object, const Where& where) {
    json::as_object(object, where);
    return json::as_string(required(object, "type", where), where.at("type"));
}

// A one-character string (Metaspace's replacement, Strip's content).
std::uint32_t one_character(const Value& value, const Where& where) {
    const std::vector<std::uint32_t> codes = code_points(json::as_string(value, where));
    if (codes.size() != 1) json::refuse(where, value, "expected one character");
    return codes.front();
}

// A pattern object {"String": s}: its string; {"Regex": r} is refused with `what`.
const std::string& string_pattern(const Value& pattern, const Where& where, const char* what) {
    json::as_object(pattern, where);
    if (const Value* text = pattern.find("String"))
        return json::as_string(*text, where.at("String"));
    json::refuse(where, pattern,
                 std::string(what) +
                     " with a Regex pattern is not supported; mha reads String patterns here");
}

// A list of steps: a Sequence's members (under `list`) flattened, else the one step.
template <typename Read>
void read_steps(const Value& object, const Where& where, const char* list, Read read) {
    if (type_of(object, where) != "Sequence") {
        read(object, where);
        return;
    }
    const Where items = where.at(list);
    const std::vector<Value>& steps = json::as_array(required(object, list, where), items);
    for (std::size_t i = 0; i < steps.size(); ++i) read_steps(steps[i], items.at(i), list, read);
}

// ---- normalizer ----

void read_normalizer(const Value& object, const Where& where, std::vector<NormalizerStep>& out) {
    const std::string& type = type_of(object, where);
    NormalizerStep step;
    if (type == "NFC") {
        step.kind = NormalizerStep::Kind::nfc;
    } else if (type == "Prepend") {
        step.kind = NormalizerStep::Kind::prepend;
        step.content =
            code_points(json::as_string(required(object, "prepend", where), where.at("prepend")));
    } else if (type == "Replace") {
        step.kind = NormalizerStep::Kind::replace;
        step.pattern = code_points(string_pattern(required(object, "pattern", where),
                                                  where.at("pattern"), "the normalizer Replace"));
        step.content =
            code_points(json::as_string(required(object, "content", where), where.at("content")));
    } else {
        json::refuse(
            where.at("type"), required(object, "type", where),
            "normalizer " + type +
                " is not supported; mha reads Prepend, Replace, NFC and Sequence of these");
    }
    out.push_back(std::move(step));
}

// ---- pre-tokenizer ----

SplitBehavior split_behavior(const Value& value, const Where& where) {
    const std::string& name = json::as_string(value, where);
    if (name == "Isolated") return SplitBehavior::isolated;
    if (name == "Removed") return SplitBehavior::removed;
    if (name == "MergedWithPrevious") return SplitBehavior::merged_with_previous;
    if (name == "MergedWithNext") return SplitBehavior::merged_with_next;
    json::refuse(where, value,
                 "Split behavior " + name +
                     " is not supported; mha reads Isolated, Removed, MergedWithPrevious and "
                     "MergedWithNext");
}

PreTokenizerStep read_split(const Value& object, const Where& where) {
    PreTokenizerStep step;
    step.kind = PreTokenizerStep::Kind::split;
    const Where at = where.at("pattern");
    const Value& pattern = json::as_object(required(object, "pattern", where), at);
    if (const Value* regex = pattern.find("Regex")) {
        const std::string& text = json::as_string(*regex, at.at("Regex"));
        step.pattern = pattern_of(text);
        if (!step.pattern)
            json::refuse(at.at("Regex"), *regex,
                         "the Split pattern " + text +
                             " is not implemented; mha matches GPT-2's, Llama 3's and Qwen 2's "
                             "patterns, and strings");
    } else {
        step.literal = code_points(string_pattern(pattern, at, "Split"));
    }
    step.behavior = split_behavior(required(object, "behavior", where), where.at("behavior"));
    if (flag(object, "invert", false, where))
        json::refuse(where.at("invert"), *object.find("invert"),
                     "Split with invert true is not supported");
    return step;
}

PrependScheme prepend_scheme(const Value& object, const Where& where) {
    if (const Value* scheme = present(object, "prepend_scheme")) {
        const std::string& name = json::as_string(*scheme, where.at("prepend_scheme"));
        if (name == "always") return PrependScheme::always;
        if (name == "first") return PrependScheme::first;
        if (name == "never") return PrependScheme::never;
        json::refuse(where.at("prepend_scheme"), *scheme,
                     "prepend_scheme " + name + " is unknown; expected first, always or never");
    }
    // files before tokenizers 0.19 say add_prefix_space
    return flag(object, "add_prefix_space", true, where) ? PrependScheme::always
                                                         : PrependScheme::never;
}

void read_pre_tokenizer(const Value& object, const Where& where,
                        std::vector<PreTokenizerStep>& out) {
    const std::string& type = type_of(object, where);
    if (type == "Split") {
        out.push_back(read_split(object, where));
        return;
    }
    PreTokenizerStep step;
    if (type == "ByteLevel") {
        step.kind = PreTokenizerStep::Kind::byte_level;
        step.add_prefix_space = flag(object, "add_prefix_space", true, where);
        step.use_regex = flag(object, "use_regex", true, where);
    } else if (type == "Metaspace") {
        step.kind = PreTokenizerStep::Kind::metaspace;
        if (const Value* r = present(object, "replacement"))
            step.replacement = one_character(*r, where.at("replacement"));
        step.prepend_scheme = prepend_scheme(object, where);
        step.split = flag(object, "split", true, where);
    } else {
        json::refuse(
            where.at("type"), required(object, "type", where),
            "pre-tokenizer " + type +
                " is not supported; mha reads ByteLevel, Split, Metaspace and Sequence of these");
    }
    out.push_back(step);
}

// ---- model ----

void refuse_option(const Value& model, const std::string& key, const Where& where,
                   const std::string& why) {
    const Value* value = present(model, key);
    if (!value) return;
    const bool unset =
        (value->kind == json::Kind::string && value->text.empty()) ||
        (value->kind == json::Kind::number && json::as_double(*value, where.at(key)) == 0);
    if (!unset)
        json::refuse(where.at(key), *value, "BPE's " + key + " is not supported (" + why + ")");
}

Vocabulary read_vocabulary(const Value& model, const Where& where, const std::string& path) {
    const Where at = where.at("vocab");
    const Value& vocab = json::as_object(required(model, "vocab", where), at);
    std::vector<std::pair<std::string, std::uint32_t>> entries;
    entries.reserve(vocab.members.size());
    for (const auto& [token, id] : vocab.members) {
        const std::uint64_t value = json::as_size(id, at.at(token));
        if (value > UINT32_MAX) json::refuse(at.at(token), id, "an id beyond 2^32 - 1");
        entries.emplace_back(token, static_cast<std::uint32_t>(value));
    }
    return Vocabulary(std::move(entries), path + " model.vocab");
}

// Both forms: "left right" (one space between) and ["left", "right"].
std::pair<std::string, std::string> merge_pair(const Value& merge, const Where& where) {
    if (merge.kind == json::Kind::array) {
        const std::vector<Value>& parts = merge.items;
        if (parts.size() != 2) json::refuse(where, merge, "expected a merge of two tokens");
        return {json::as_string(parts[0], where.at(0)), json::as_string(parts[1], where.at(1))};
    }
    const std::string& text = json::as_string(merge, where);
    const std::size_t space = text.find(' ');
    if (space == std::string::npos || text.find(' ', space + 1) != std::string::npos)
        json::refuse(where, merge,
                     "expected two tokens separated by one space, found \"" + text + "\"");
    return {text.substr(0, space), text.substr(space + 1)};
}

void read_model(const Value& root, const Where& root_where, const std::string& path,
                TokenizerStages& out) {
    const Where where = root_where.at("model");
    const Value& model = json::as_object(required(root, "model", root_where), where);
    const Value* type = present(model, "type");
    const std::string name = type ? json::as_string(*type, where.at("type")) : "BPE";
    if (name != "BPE")
        json::refuse(where.at("type"), *type,
                     "model type " + name + " is not supported; mha reads BPE models only");
    refuse_option(model, "dropout", where, "it drops merges at random");
    refuse_option(model, "continuing_subword_prefix", where,
                  "no byte-level or SentencePiece BPE uses it");
    refuse_option(model, "end_of_word_suffix", where, "no byte-level or SentencePiece BPE uses it");

    BpeOptions options;
    options.byte_fallback = flag(model, "byte_fallback", false, where);
    Vocabulary vocabulary = read_vocabulary(model, where, path);
    if (const Value* unk = present(model, "unk_token")) {
        const std::string& token = json::as_string(*unk, where.at("unk_token"));
        const std::int64_t id = vocabulary.find(token);
        if (id < 0)
            json::refuse(where.at("unk_token"), *unk,
                         "the unknown token \"" + token + "\" is not in model.vocab");
        options.unk_id = id;
        options.fuse_unk = flag(model, "fuse_unk", false, where);
    }
    out.ignore_merges = flag(model, "ignore_merges", false, where);
    out.model = std::make_unique<BpeModel>(std::move(vocabulary), options);

    const Where at = where.at("merges");
    const std::vector<Value>& merges = json::as_array(required(model, "merges", where), at);
    out.model->reserve_merges(merges.size());
    for (std::size_t i = 0; i < merges.size(); ++i) {
        const auto [left, right] = merge_pair(merges[i], at.at(i));
        out.model->add_merge(left, right,
                             [&] { return path + " model.merges[" + std::to_string(i) + "]"; });
    }
}

// ---- added tokens ----

// The added tokens; without a normalizer the text as given is the normalized text, and those
// marked normalized are found there like the others.
std::vector<AddedToken> read_added_tokens(const Value& root, const Where& root_where,
                                          bool has_normalizer) {
    const Value* list = present(root, "added_tokens");
    if (!list) return {};
    std::vector<AddedToken> tokens;
    const Where where = root_where.at("added_tokens");
    const std::vector<Value>& items = json::as_array(*list, where);
    for (std::size_t i = 0; i < items.size(); ++i) {
        const Where at = where.at(i);
        const Value& token = json::as_object(items[i], at);
        AddedToken added;
        added.content = json::as_string(required(token, "content", at), at.at("content"));
        const std::uint64_t id = json::as_size(required(token, "id", at), at.at("id"));
        if (id > UINT32_MAX) json::refuse(at.at("id"), *token.find("id"), "an id beyond 2^32 - 1");
        added.id = static_cast<std::uint32_t>(id);
        added.special = flag(token, "special", false, at);
        if (flag(token, "single_word", false, at))
            json::refuse(
                at.at("single_word"), *token.find("single_word"),
                "added token \"" + added.content + "\" with single_word true is not supported");
        added.lstrip = flag(token, "lstrip", false, at);
        added.rstrip = flag(token, "rstrip", false, at);
        if (added.content.empty())
            json::refuse(at.at("content"), *token.find("content"), "an empty added token");
        added.normalized = has_normalizer && flag(token, "normalized", false, at);
        if (added.normalized && (added.lstrip || added.rstrip))
            json::refuse(at.at("normalized"), *token.find("normalized"),
                         "added token \"" + added.content +
                             "\" is marked normalized with lstrip or rstrip, which mha does not "
                             "implement");
        tokens.push_back(std::move(added));
    }
    return tokens;
}

// The added tokens marked normalized, as the normalizer writes them (Hugging Face finds them
// in the normalized text: "<s>" after Llama 2's Prepend is "▁<s>").
std::vector<NormalizedAddedToken> normalized_contents(const std::vector<AddedToken>& added,
                                                      const std::vector<NormalizerStep>& steps) {
    std::vector<NormalizedAddedToken> out;
    for (const AddedToken& token : added) {
        if (!token.normalized) continue;
        NormalizedText text{token.content, {}};
        for (const NormalizerStep& step : steps) text = normalize(step, text);
        out.push_back({code_points(text.text), token.content, token.id});
    }
    return out;
}

// ---- post-processor ----

// TemplateProcessing's "single": the special tokens before and after the sequence $A.
struct Template {
    std::vector<SpecialToken> before, after;
};

void read_template(const Value& object, const Where& where, Template& out) {
    const Where specials_at = where.at("special_tokens");
    const Value& specials = json::as_object(required(object, "special_tokens", where), specials_at);
    const Where single_at = where.at("single");
    const std::vector<Value>& single = json::as_array(required(object, "single", where), single_at);
    bool after = false;
    for (std::size_t i = 0; i < single.size(); ++i) {
        const Where at = single_at.at(i);
        const Value& item = json::as_object(single[i], at);
        if (item.find("Sequence")) {
            after = true;
            continue;
        }
        const Value* special = item.find("SpecialToken");
        if (!special)
            json::refuse(at, item, "expected {\"SpecialToken\": ...} or {\"Sequence\": ...}");
        const Where special_at = at.at("SpecialToken");
        const Value& id_value = required(*special, "id", special_at);
        const std::string& name = json::as_string(id_value, special_at.at("id"));
        const Value* entry = specials.find(name);
        if (!entry)
            json::refuse(special_at.at("id"), id_value,
                         "\"" + name + "\" is not in special_tokens");
        const Where entry_at = specials_at.at(name);
        const Where ids_at = entry_at.at("ids"), tokens_at = entry_at.at("tokens");
        const std::vector<Value>& ids = json::as_array(required(*entry, "ids", entry_at), ids_at);
        const std::vector<Value>& tokens =
            json::as_array(required(*entry, "tokens", entry_at), tokens_at);
        if (tokens.size() != ids.size())
            json::refuse(tokens_at, *entry->find("tokens"), "expected as many tokens as ids");
        for (std::size_t k = 0; k < ids.size(); ++k) {
            const std::uint64_t id = json::as_size(ids[k], ids_at.at(k));
            if (id > UINT32_MAX) json::refuse(ids_at.at(k), ids[k], "an id beyond 2^32 - 1");
            (after ? out.after : out.before)
                .push_back(
                    {static_cast<std::uint32_t>(id), json::as_string(tokens[k], tokens_at.at(k))});
        }
    }
}

void read_post_processor(const Value& object, const Where& where, Template& out) {
    const std::string& type = type_of(object, where);
    if (type == "TemplateProcessing")
        read_template(object, where, out);
    else if (type != "ByteLevel")  // ByteLevel only trims offsets: no ids
        json::refuse(
            where.at("type"), required(object, "type", where),
            "post-processor " + type +
                " is not supported; mha reads TemplateProcessing, ByteLevel and Sequence of these");
}

// ---- decoder ----

void read_decoder(const Value& object, const Where& where, std::vector<DecoderStep>& out) {
    const std::string& type = type_of(object, where);
    DecoderStep step;
    if (type == "ByteLevel") {
        step.kind = DecoderStep::Kind::byte_level;
    } else if (type == "ByteFallback") {
        step.kind = DecoderStep::Kind::byte_fallback;
    } else if (type == "Fuse") {
        step.kind = DecoderStep::Kind::fuse;
    } else if (type == "Replace") {
        step.kind = DecoderStep::Kind::replace;
        step.pattern = string_pattern(required(object, "pattern", where), where.at("pattern"),
                                      "the decoder Replace");
        step.content = json::as_string(required(object, "content", where), where.at("content"));
    } else if (type == "Strip") {
        step.kind = DecoderStep::Kind::strip;
        step.strip_code = one_character(required(object, "content", where), where.at("content"));
        step.start = json::as_size(required(object, "start", where), where.at("start"));
        step.stop = json::as_size(required(object, "stop", where), where.at("stop"));
    } else if (type == "Metaspace") {
        step.kind = DecoderStep::Kind::metaspace;
        if (const Value* r = present(object, "replacement"))
            step.replacement = one_character(*r, where.at("replacement"));
        step.prepend_scheme = prepend_scheme(object, where);
    } else {
        json::refuse(where.at("type"), required(object, "type", where),
                     "decoder " + type +
                         " is not supported; mha reads ByteLevel, Replace, ByteFallback, Fuse, "
                         "Strip, Metaspace and Sequence of these");
    }
    out.push_back(std::move(step));
}

// ---- tokenizer_config.json ----

// The id of a token named by its text: an added token's, else the vocabulary's; -1 if none.
std::int64_t id_of(const std::string& token, const std::vector<AddedToken>& added,
                   const Vocabulary& vocabulary) {
    for (const AddedToken& a : added) {
        if (a.content == token) return a.id;
    }
    return vocabulary.find(token);
}

// add_bos_token, as transformers' Llama and Gemma tokenizers apply it: true puts bos_token
// before the text (when the template has none), false takes the template's tokens before it
// away. add_eos_token is not applied: mha never adds an EOS.
void apply_config(const std::string& path, Ledger& ledger, const std::vector<AddedToken>& added,
                  const Vocabulary& vocabulary, Template& specials) {
    const std::string text = read_file(path, ledger);
    const std::uint64_t parse = json::parse_bytes(text);
    ledger.check(parse, path, "parsing it needs " + byte_size(parse));
    const Value root = json::parse(text, path);
    const Where where{path, ""};
    json::as_object(root, where);
    const Value* add_bos = present(root, "add_bos_token");
    if (!add_bos) return;
    if (!json::as_bool(*add_bos, where.at("add_bos_token"))) {
        specials.before.clear();
        return;
    }
    if (!specials.before.empty()) return;
    const Value* bos = present(root, "bos_token");
    if (!bos)
        json::refuse(where.at("add_bos_token"), *add_bos,
                     "add_bos_token is true but there is no bos_token");
    const Where bos_at = where.at("bos_token");
    const Value& content =
        bos->kind == json::Kind::object ? required(*bos, "content", bos_at) : *bos;
    const std::string& token =
        json::as_string(content, bos->kind == json::Kind::object ? bos_at.at("content") : bos_at);
    const std::int64_t id = id_of(token, added, vocabulary);
    if (id < 0)
        json::refuse(bos_at, content,
                     "the bos_token \"" + token + "\" is not a token of the tokenizer");
    specials.before.push_back({static_cast<std::uint32_t>(id), token});
}

}  // namespace

TokenizerStages read_tokenizer_json(const std::string& path, Ledger& ledger) {
    const std::string text = read_file(path, ledger);
    ledger.hold(text.size());
    const std::uint64_t parse = json::parse_bytes(text);
    ledger.check(parse, path, "parsing it needs " + byte_size(parse));
    ledger.hold(parse);
    const Value root = json::parse(text, path);
    const Where where{path, ""};
    json::as_object(root, where);

    TokenizerStages out;
    out.source = path;
    read_model(root, where, path, out);
    std::vector<NormalizerStep> normalizers;
    if (const Value* n = present(root, "normalizer"))
        read_steps(*n, where.at("normalizer"), "normalizers",
                   [&](const Value& v, const Where& w) { read_normalizer(v, w, normalizers); });
    std::vector<AddedToken> added_tokens = read_added_tokens(root, where, !normalizers.empty());
    std::vector<NormalizedAddedToken> normalized_added =
        normalized_contents(added_tokens, normalizers);
    if (!normalizers.empty())
        out.normalizer = std::make_unique<JsonNormalizer>(std::move(normalizers));
    std::vector<PreTokenizerStep> pre_tokenizers;
    if (const Value* p = present(root, "pre_tokenizer"))
        read_steps(
            *p, where.at("pre_tokenizer"), "pretokenizers",
            [&](const Value& v, const Where& w) { read_pre_tokenizer(v, w, pre_tokenizers); });
    auto pre_tokenizer =
        std::make_unique<JsonPreTokenizer>(std::move(pre_tokenizers), std::move(normalized_added));
    // measured on 1 MiB of the corpus with --trace: Llama 3 24 B a byte (streamed), Qwen 2 108
    // (its NFC copies the text), Llama 2 153 (no pre-tokenizer: BPE takes the text as one piece)
    if (out.normalizer || !pre_tokenizer->streams()) out.bytes_per_text_byte = 256;
    out.pre_tokenizer = std::move(pre_tokenizer);
    Template specials;
    if (const Value* p = present(root, "post_processor"))
        read_steps(*p, where.at("post_processor"), "processors",
                   [&](const Value& v, const Where& w) { read_post_processor(v, w, specials); });
    const std::string config =
        std::filesystem::path(path).parent_path().string() + "/tokenizer_config.json";
    std::error_code failed;
    if (std::filesystem::exists(config, failed))
        apply_config(config, ledger, added_tokens, out.model->vocabulary(), specials);
    if (!specials.before.empty() || !specials.after.empty())
        out.post_processor = std::make_unique<TemplatePostProcessor>(std::move(specials.before),
                                                                     std::move(specials.after));
    std::vector<DecoderStep> decoders;
    if (const Value* d = present(root, "decoder"))
        read_steps(*d, where.at("decoder"), "decoders",
                   [&](const Value& v, const Where& w) { read_decoder(v, w, decoders); });
    if (!decoders.empty()) out.decoder = std::make_unique<JsonDecoder>(std::move(decoders));
    out.added = AddedTokens(std::move(added_tokens));
    return out;
}

}  // namespace mha::tokenizers
