#pragma once
// The layout of the --input/--key/--value files and the conversions at the edge: the files ->
// (B, L, features) for the pass, the pass's results -> the files' layout for --save.

#include <string>
#include <utility>
#include <vector>

#include "core/backward/backward.h"
#include "core/pass/attention.h"
#include "core/tensor/tensor.h"
#include "io/weights.h"

namespace mha {

enum class InputLayout {
    BatchFirst,  // (B, L, features): nn.MultiheadAttention(batch_first=True)
    SeqFirst,    // (L, B, features): PyTorch's default, batch_first=False (--seq-first)
    Unbatched,   // (L, features): one sequence, read as B = 1
};

// How a file of `dims` dimensions is read: 2 is unbatched, 3 is batched (seq-first on request).
InputLayout input_layout(std::size_t dims, bool seq_first);

// "(B, length, features)", "(length, B, features)" or "(length, features)", for messages.
std::string layout_shape(InputLayout layout);

// A file's array -> (B, L, features): transpose(0, 1) for seq-first, unsqueeze(0) unbatched.
Tensor to_batch_first(const Tensor& x, InputLayout layout);

// A (B, L, features) tensor in a file's layout: transpose(0, 1) seq-first, squeeze(0) unbatched.
Tensor from_batch_first(const Tensor& x, InputLayout layout);

// What --save writes: output (B, N, d_model) and attn_weights (B, h, N, M) in the inputs'
// layout, as nn.MultiheadAttention returns them: output (N, B, d_model) seq-first; output
// (N, d_model) and attn_weights (h, N, M) unbatched. No attn_weights when the path streamed.
std::vector<std::pair<std::string, Tensor>> saved_arrays(const ForwardResult& result,
                                                         InputLayout layout);

// What --save writes with --backward besides: grad.input, and for cross-attention grad.key and
// grad.value, in the input files' layout; then grad.<prefix><name> for every weight as
// `names` says the state dict held it (stacked, transposed, shaped as in the file).
std::vector<std::pair<std::string, Tensor>> saved_gradients(const Gradients& grads,
                                                            InputLayout layout,
                                                            const StateDictNames& names,
                                                            const std::string& prefix);

// The same for --form mla: grad.input, then grad.<name> for every MLA weight in the names its
// state dict used (Hugging Face's for seeded weights), with h heads.
std::vector<std::pair<std::string, Tensor>> saved_mla_gradients(const Gradients& grads,
                                                                InputLayout layout, MlaNames names,
                                                                std::size_t heads);

// The layout and the transposes it implies, one line each for the trace; none for batch-first.
std::vector<std::string> layout_notes(InputLayout layout);

}  // namespace mha
