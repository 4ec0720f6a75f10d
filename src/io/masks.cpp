// Reading masks with PyTorch's conventions (or the tutorials', on request).

#include "io/masks.h"

#include "core/error.h"
#include "io/finite.h"

#include <cmath>
#include <limits>
#include <vector>

namespace mha {

namespace {

std::string describe(const npy::Array& mask, const std::string& what) {
    return what + " (" + mask.dtype_name() + " " + to_string(mask.shape) + ")";
}

}  // namespace

Tensor additive_mask(const npy::Array& mask, MaskMeaning meaning, const std::string& what,
                     std::string& note) {
    if (mask.kind == 'f') {
        if (meaning == MaskMeaning::Keep) {
            throw Error(describe(mask, what) +
                        " is a float mask, which is added to the scores;"
                        " --mask-means keep applies to bool and integer masks only");
        }
        check_finite(mask, describe(mask, what), Infinities::NegativeAllowed);
        note = describe(mask, what) + ": added to the scores (a float mask, as PyTorch adds it)";
        return npy::to_tensor(mask);
    }
    const bool keep = meaning == MaskMeaning::Keep;
    note = describe(mask, what) +
           (keep ? ": 0 = blocked, non-zero = attends (--mask-means keep)"
                 : ": True/non-zero = blocked (nn.MultiheadAttention's convention)");
    const float blocked = -std::numeric_limits<float>::infinity();
    std::vector<float> values(mask.values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
        const bool nonzero = mask.values[i] != 0.0;
        values[i] = (nonzero != keep) ? blocked : 0.0f;
    }
    return Tensor(mask.shape, std::move(values));
}

bool blocks_diagonal_or_a_row(const Tensor& additive) {
    const Shape& shape = additive.shape();
    if (shape.size() < 2) return false;
    const std::size_t n = shape[shape.size() - 2], m = shape[shape.size() - 1];
    if (n == 0 || m == 0) return false;
    const float* values = additive.data();  // freshly built, so row-major
    const auto blocked = [&](std::size_t at) { return std::isinf(values[at]); };
    for (std::size_t start = 0; start + n * m <= additive.numel(); start += n * m) {
        bool diagonal = n == m;
        for (std::size_t i = 0; i < n; ++i) {
            bool row = true;
            for (std::size_t j = 0; j < m; ++j) row = row && blocked(start + i * m + j);
            if (row) return true;
            diagonal = diagonal && blocked(start + i * m + i);
        }
        if (diagonal) return true;
    }
    return false;
}

bool load_attn_mask(const std::string& path, MaskMeaning meaning, const Ledger& ledger,
                    Masks& masks) {
    std::string note;
    const npy::Array file = npy::read_npy(path, ledger);
    masks.attn_mask = additive_mask(file, meaning, "attn_mask " + path, note);
    masks.notes.push_back(note);
    return file.kind != 'f' && meaning == MaskMeaning::Block &&
           blocks_diagonal_or_a_row(masks.attn_mask);
}

void load_key_padding_mask(const std::string& path, const Ledger& ledger, Masks& masks) {
    std::string note;
    masks.key_padding = additive_mask(npy::read_npy(path, ledger), MaskMeaning::Block,
                                      "key_padding_mask " + path, note);
    masks.notes.push_back(note);
}

Tensor broadcast_attn_mask(const Tensor& mask, std::size_t batch, std::size_t heads) {
    if (mask.dim() != 4) return mask;
    const Shape& shape = mask.shape();
    const bool batch_ok = shape[0] == 1 || shape[0] == batch;
    const bool heads_ok = shape[1] == 1 || shape[1] == heads;
    if (!batch_ok || !heads_ok) {
        throw Error("attn_mask: a 4-D mask broadcasts to (B, h, N, M) = (" + std::to_string(batch) +
                    ", " + std::to_string(heads) + ", N, M), so it must be (1 or " +
                    std::to_string(batch) + ", 1 or " + std::to_string(heads) + ", N, M); got " +
                    to_string(shape));
    }
    const Shape plane{shape[2], shape[3]};
    if (shape[1] == 1) {  // (1, 1, N, M) -> (N, M); (B, 1, N, M) -> (B, N, M)
        return shape[0] == 1 ? mask.view(plane) : mask.view({shape[0], shape[2], shape[3]});
    }
    // (B, h, N, M) -> (B·h, N, M), batch-major as PyTorch orders it; (1, h, ...) repeated B times
    const std::vector<float> one = mask.to_vector();
    std::vector<float> values;
    for (std::size_t b = 0; b < batch; ++b) {
        const std::size_t from = shape[0] == 1 ? 0 : b * one.size() / batch;
        const std::size_t count = shape[0] == 1 ? one.size() : one.size() / batch;
        values.insert(values.end(), one.begin() + from, one.begin() + from + count);
    }
    return Tensor({batch * heads, shape[2], shape[3]}, std::move(values));
}

Tensor unbatched_key_padding(const Tensor& padding) {
    return padding.dim() == 1 ? padding.view({1, padding.size(0)}) : padding;
}

}  // namespace mha
