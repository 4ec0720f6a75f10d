// The evaluation's fixed texts, and one evaluation of the model on them.

#include "app/train/train_eval.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "core/layers/cross_entropy.h"
#include "io/init.h"
#include "io/printable.h"
#include "show/head_roles.h"

namespace mha {

namespace {

// Characters as the corpus's tokens (the unknown token for one outside its vocabulary).
TokenText tokenized(std::vector<std::string> characters, const Corpus& corpus) {
    std::unordered_map<std::string, std::size_t> token_of;
    for (std::size_t t = 1; t < corpus.vocab.size(); ++t)
        token_of.emplace(utf8_encode(corpus.vocab[t]), t);
    TokenText out;
    for (const std::string& c : characters) {
        const auto found = token_of.find(c);
        out.tokens.push_back(found == token_of.end() ? unknown_token : found->second);
    }
    out.characters = std::move(characters);
    return out;
}

// The UTF-8 characters of text, at most `limit` of them.
std::vector<std::string> characters_of(const std::string& text, std::size_t limit) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < text.size() && out.size() < limit;) {
        const std::size_t length = std::max<std::size_t>(1, utf8_length(text, i));
        out.push_back(text.substr(i, length));
        i += length;
    }
    return out;
}

// The mean of the values that are defined (head_roles gives NaN where no query qualifies).
void add_defined(double value, double& sum, std::size_t& count) {
    if (std::isnan(value)) return;
    sum += value;
    ++count;
}

}  // namespace

EvaluationTexts evaluation_texts(const Corpus& corpus, std::uint64_t seed, std::size_t context) {
    EvaluationTexts texts;
    texts.held_out = held_out_batch(corpus, seed, held_out_rows, context);
    Random random(seed, evaluation_stream, 1);
    const std::size_t length = std::min(prose_length, context);
    for (std::size_t i = 0; i < role_samples; ++i) {
        const std::size_t start = random.below(corpus.held_out.size() - length + 1);
        const auto from = corpus.held_out_characters.begin() + std::ptrdiff_t(start);
        texts.prose.push_back(tokenized({from, from + std::ptrdiff_t(length)}, corpus));
    }
    const std::size_t letters = std::min(segment_letters, context / 2);
    for (std::size_t i = 0; i < role_samples; ++i) {
        std::vector<std::string> segment;
        for (std::size_t k = 0; k < letters; ++k)
            segment.push_back(std::string(1, char('a' + random.below(26))));
        std::vector<std::string> twice = segment;
        twice.insert(twice.end(), segment.begin(), segment.end());
        texts.segments.push_back(tokenized(std::move(twice), corpus));
    }
    texts.probe = tokenized(characters_of(probe_text, context), corpus);
    return texts;
}

Evaluated evaluate(const Model& model, const EvaluationTexts& texts, std::size_t threads) {
    NullTracer quiet;
    Evaluated out;
    TrainEvaluation& e = out.evaluation;
    const std::size_t n = model.context(), rows = texts.held_out.tokens.size() / n;
    double loss = 0.0;
    for (std::size_t r = 0; r < rows; ++r) {
        const auto at = [&](const std::vector<std::size_t>& v) {
            return std::vector<std::size_t>(v.begin() + std::ptrdiff_t(r * n),
                                            v.begin() + std::ptrdiff_t((r + 1) * n));
        };
        const ModelResult result =
            forward_model(model, at(texts.held_out.tokens), 0, threads, quiet);
        loss += cross_entropy(result.logits, at(texts.held_out.targets), threads).loss;
    }
    e.val_loss = loss / double(rows);
    const std::size_t layers = model.layers.size();
    const auto mean_scores = [&](const std::vector<TokenText>& samples, double HeadRoles::*score) {
        std::vector<std::vector<double>> sums(layers), counts(layers);
        std::vector<std::vector<std::size_t>> defined(layers);
        for (std::size_t l = 0; l < layers; ++l) {
            sums[l].assign(model.layers[l].heads, 0.0);
            defined[l].assign(model.layers[l].heads, 0);
        }
        for (const TokenText& text : samples) {
            const ModelResult r = forward_model(model, text.tokens, 0, threads, quiet);
            for (std::size_t l = 0; l < layers; ++l) {
                const std::vector<HeadRoles> roles = head_roles(r.weights[l], text.characters);
                for (std::size_t h = 0; h < roles.size(); ++h)
                    add_defined(roles[h].*score, sums[l][h], defined[l][h]);
            }
        }
        for (std::size_t l = 0; l < layers; ++l)
            for (std::size_t h = 0; h < sums[l].size(); ++h)
                sums[l][h] = defined[l][h] ? sums[l][h] / double(defined[l][h]) : 0.0;
        return sums;
    };
    e.prev_token = mean_scores(texts.prose, &HeadRoles::previous);
    e.induction = mean_scores(texts.segments, &HeadRoles::induction);
    out.probe_weights = probe_weights(model, texts, threads);
    return out;
}

std::vector<Tensor> probe_weights(const Model& model, const EvaluationTexts& texts,
                                  std::size_t threads) {
    NullTracer quiet;
    return forward_model(model, texts.probe.tokens, 0, threads, quiet).weights;
}

}  // namespace mha
