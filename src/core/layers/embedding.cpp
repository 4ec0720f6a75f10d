// Token and position embeddings, forward and backward.

#include "core/layers/embedding.h"

#include <algorithm>

#include "core/error.h"
#include "core/kernels/parallel.h"

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

}  // namespace

Tensor embed(const Tensor& token_embedding, const Tensor& position_embedding,
             const std::vector<std::size_t>& tokens, std::size_t batch) {
    check_tokens(tokens, batch, token_embedding.size(0), position_embedding.size(0));
    const std::size_t n = tokens.size() / batch, e = token_embedding.size(1);
    Tensor x({batch, n, e});
    for (std::size_t row = 0; row < batch * n; ++row) {
        const float* token = token_embedding.data() + tokens[row] * e;
        const float* position = position_embedding.data() + (row % n) * e;
        for (std::size_t f = 0; f < e; ++f) x.data()[row * e + f] = token[f] + position[f];
    }
    return x;
}

EmbeddingGrads embed_backward(const Tensor& dx, const std::vector<std::size_t>& tokens,
                              std::size_t vocab, std::size_t context, std::size_t threads) {
    const Tensor d = dx.contiguous();
    check_tokens(tokens, d.size(0), vocab, context);
    if (tokens.size() != d.numel() / d.size(2)) {
        throw Error("the embeddings' gradient " + to_string(d.shape()) + " does not match " +
                    std::to_string(tokens.size()) + " tokens");
    }
    const std::size_t n = d.size(1), e = d.size(2), rows = tokens.size();
    EmbeddingGrads grads{Tensor({vocab, e}), Tensor({context, e})};
    threads = threads_for(std::uint64_t(rows) * e * 2, threads);
    parallel_for(e, threads, [&](std::size_t begin, std::size_t end) {
        std::vector<double> token(vocab), position(n);
        for (std::size_t f = begin; f < end; ++f) {
            std::fill(token.begin(), token.end(), 0.0);
            std::fill(position.begin(), position.end(), 0.0);
            for (std::size_t row = 0; row < rows; ++row) {
                token[tokens[row]] += d.data()[row * e + f];
                position[row % n] += d.data()[row * e + f];
            }
            for (std::size_t t = 0; t < vocab; ++t) grads.token.data()[t * e + f] = float(token[t]);
            for (std::size_t p = 0; p < n; ++p)
                grads.position.data()[p * e + f] = float(position[p]);
        }
    });
    return grads;
}

}  // namespace mha
