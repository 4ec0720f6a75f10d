// Token and position embeddings, forward and backward.

#include "core/layers/embedding.h"

#include <algorithm>

#include "core/error.h"
#include "core/threads/parallel.h"

namespace mha {

namespace {

// tokens holds `batch` rows of N ≤ context ids, each below vocab; throws mha::Error otherwise.
void check_tokens(const std::vector<std::size_t>& tokens, std::size_t batch, std::size_t vocab,
                  std::size_t context) {
    if (batch == 0 || tokens.empty() || tokens.size() % batch != 0 ||
        tokens.size() / batch > context) {
        throw Error("the embeddings read B rows of 1 to " + std::to_string(context) +
                    " tokens each (B = " + std::to_string(batch) + "), got " +
                    std::to_string(tokens.size()) + " tokens");
    }
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        if (tokens[i] >= vocab) {
            throw Error("token " + std::to_string(tokens[i]) + " at position " + std::to_string(i) +
                        " is not below the vocabulary size " + std::to_string(vocab));
        }
    }
}

// Columns embed_backward sums side by side, and what threads_for weighs an element of dx by
// there: its two conversions and adds in double cost about as much as 16 of gemm's
// multiply-adds (32 x 128 x 64 took 0.16 ms on one thread).
constexpr std::size_t embed_columns = 16;
constexpr std::uint64_t embed_work = 16;

}  // namespace

Tensor embed(const Tensor& token_embedding, const Tensor& position_embedding,
             const std::vector<std::size_t>& tokens, std::size_t batch, Workspace* workspace) {
    check_tokens(tokens, batch, token_embedding.size(0), position_embedding.size(0));
    const std::size_t n = tokens.size() / batch, e = token_embedding.size(1);
    if (any_dry(token_embedding, position_embedding)) return new_dry(workspace, {batch, n, e});
    Tensor x = new_uninitialised(workspace, {batch, n, e});
    for (std::size_t row = 0; row < batch * n; ++row) {
        const float* token = token_embedding.data() + tokens[row] * e;
        const float* position = position_embedding.data() + (row % n) * e;
        for (std::size_t f = 0; f < e; ++f) x.data()[row * e + f] = token[f] + position[f];
    }
    return x;
}

Tensor embed_scaled(const Tensor& token_embedding, const std::vector<std::size_t>& tokens,
                    float scale, Workspace* workspace) {
    const std::size_t vocab = token_embedding.size(0), e = token_embedding.size(1);
    check_tokens(tokens, 1, vocab, tokens.size());
    if (token_embedding.dry()) return new_dry(workspace, {1, tokens.size(), e});
    Tensor x = new_uninitialised(workspace, {1, tokens.size(), e});
    for (std::size_t row = 0; row < tokens.size(); ++row) {
        const float* token = token_embedding.data() + tokens[row] * e;
        for (std::size_t f = 0; f < e; ++f) x.data()[row * e + f] = token[f] * scale;
    }
    return x;
}

EmbeddingGrads embed_backward(const Tensor& dx, const std::vector<std::size_t>& tokens,
                              std::size_t vocab, std::size_t context, std::size_t threads,
                              Workspace* workspace) {
    const Tensor d = dx.contiguous();
    check_tokens(tokens, d.size(0), vocab, context);
    if (tokens.size() != d.numel() / d.size(2)) {
        throw Error("the embeddings' gradient " + to_string(d.shape()) + " does not match " +
                    std::to_string(tokens.size()) + " tokens");
    }
    const std::size_t n = d.size(1), e = d.size(2), rows = tokens.size();
    if (d.dry()) return {new_dry(workspace, {vocab, e}), new_dry(workspace, {context, e})};
    EmbeddingGrads grads{new_uninitialised(workspace, {vocab, e}),
                         new_tensor(workspace, {context, e})};
    // blocks of embed_columns columns, each block's sums kept per token and per position while
    // the rows are read along, in order
    const std::size_t blocks = (e + embed_columns - 1) / embed_columns;
    threads = threads_for(std::uint64_t(rows) * e * embed_work, threads);
    parallel_for(blocks, threads, [&](std::size_t begin, std::size_t end) {
        std::vector<double> token(vocab * embed_columns), position(n * embed_columns);
        for (std::size_t block = begin; block < end; ++block) {
            const std::size_t f0 = block * embed_columns, width = std::min(embed_columns, e - f0);
            std::fill(token.begin(), token.end(), 0.0);
            std::fill(position.begin(), position.end(), 0.0);
            for (std::size_t row = 0; row < rows; ++row) {
                const float* g = d.data() + row * e + f0;
                double* t = token.data() + tokens[row] * embed_columns;
                double* p = position.data() + row % n * embed_columns;
                for (std::size_t f = 0; f < width; ++f) {
                    t[f] += g[f];
                    p[f] += g[f];
                }
            }
            for (std::size_t t = 0; t < vocab; ++t) {
                for (std::size_t f = 0; f < width; ++f)
                    grads.token.data()[t * e + f0 + f] = float(token[t * embed_columns + f]);
            }
            for (std::size_t p = 0; p < n; ++p) {
                for (std::size_t f = 0; f < width; ++f)
                    grads.position.data()[p * e + f0 + f] = float(position[p * embed_columns + f]);
            }
        }
    });
    return grads;
}

}  // namespace mha
