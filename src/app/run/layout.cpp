// Input layouts: seq-first and unbatched files become (B, L, features) on load and go back
// to their own layout on --save.

#include "app/run/layout.h"

namespace mha {

namespace {

// x (1, ...) -> (...): the batch of one that an unbatched input was given.
Tensor squeeze_batch(const Tensor& x) {
    if (x.empty()) return x;
    const Shape& shape = x.shape();
    return x.contiguous().view(Shape(shape.begin() + 1, shape.end()));
}

}  // namespace

InputLayout input_layout(std::size_t dims, bool seq_first) {
    if (dims == 2) return InputLayout::Unbatched;
    return seq_first ? InputLayout::SeqFirst : InputLayout::BatchFirst;
}

std::string layout_shape(InputLayout layout) {
    switch (layout) {
        case InputLayout::SeqFirst:
            return "(length, B, features)";
        case InputLayout::Unbatched:
            return "(length, features)";
        default:
            return "(B, length, features)";
    }
}

Tensor to_batch_first(const Tensor& x, InputLayout layout) {
    switch (layout) {
        case InputLayout::SeqFirst:
            return x.transpose(0, 1).contiguous();  // (L, B, E) -> (B, L, E)
        case InputLayout::Unbatched: {              // (L, E) -> (1, L, E)
            Shape shape = x.shape();
            shape.insert(shape.begin(), 1);
            return x.view(shape);
        }
        default:
            return x;
    }
}

Tensor from_batch_first(const Tensor& x, InputLayout layout) {
    switch (layout) {
        case InputLayout::SeqFirst:  // (B, L, E) -> (L, B, E)
            return x.transpose(0, 1).contiguous();
        case InputLayout::Unbatched:  // (1, L, E) -> (L, E)
            return squeeze_batch(x);
        default:
            return x;
    }
}

std::vector<std::pair<std::string, Tensor>> saved_arrays(const ForwardResult& result,
                                                         InputLayout layout) {
    std::vector<std::pair<std::string, Tensor>> arrays = {
        {"output", from_batch_first(result.output, layout)}};
    if (!result.weights.empty()) {  // (1, h, N, M) -> (h, N, M) unbatched
        arrays.emplace_back("attn_weights", layout == InputLayout::Unbatched
                                                ? squeeze_batch(result.weights)
                                                : result.weights);
    }
    for (const auto& array : result.cache) arrays.push_back(array);  // --kv-quant's cache
    return arrays;
}

std::vector<std::pair<std::string, Tensor>> saved_gradients(const Gradients& grads,
                                                            InputLayout layout,
                                                            const StateDictNames& names,
                                                            const std::string& prefix) {
    std::vector<std::pair<std::string, Tensor>> arrays = {
        {"grad.input", from_batch_first(grads.input, layout)}};
    if (!grads.key.empty()) {
        arrays.emplace_back("grad.key", from_batch_first(grads.key, layout));
        arrays.emplace_back("grad.value", from_batch_first(grads.value, layout));
    }
    for (auto& array : state_dict_arrays(grads.params, names, "grad." + prefix))
        arrays.push_back(std::move(array));
    return arrays;
}

std::vector<std::pair<std::string, Tensor>> saved_mla_gradients(const Gradients& grads,
                                                                InputLayout layout, MlaNames names,
                                                                std::size_t heads) {
    std::vector<std::pair<std::string, Tensor>> arrays = {
        {"grad.input", from_batch_first(grads.input, layout)}};
    for (auto& array : mla_state_dict_arrays(grads.mla, names, heads, "grad."))
        arrays.push_back(std::move(array));
    return arrays;
}

std::vector<std::string> layout_notes(InputLayout layout) {
    switch (layout) {
        case InputLayout::SeqFirst:
            return {
                "layout: seq-first (--seq-first, PyTorch's default batch_first=False): the "
                "files are (N, B, d_model) and (M, B, kdim); dim 1 is the batch, so the "
                "pass reads x.transpose(0, 1).contiguous() -> (B, N, d_model), one copy",
                "--save: output.transpose(0, 1) -> (N, B, d_model), as the module returns "
                "it; attn_weights stay (B, h, N, M)"};
        case InputLayout::Unbatched:
            return {
                "layout: unbatched: the files are (N, d_model) and (M, kdim), one sequence; "
                "the pass reads x.unsqueeze(0) -> (B=1, N, d_model), no copy",
                "--save: output.squeeze(0) -> (N, d_model) and attn_weights.squeeze(0) -> "
                "(h, N, M), as the module returns them"};
        default:
            return {};
    }
}

}  // namespace mha
