// The paragraphs of --explain, written for a learner who knows matrix products.

#include "show/explain.h"

#include <string>

#include "core/error.h"
#include "core/pass/score_rules.h"

namespace mha {

namespace {

// What step 9 and its backward b9 say, for each normaliser of core/pass/score_rules.h.
struct NormaliserWords {
    const char* name;      // the normaliser's
    const char* forward;   // step 9
    const char* backward;  // b9
};

const NormaliserWords normaliser_words[] = {
    {"softmax",
     "The softmax turns each row of scores into weights: subtract the row's maximum (for safety; "
     "it changes nothing), exponentiate, divide by the row's sum. Each query's weights are now "
     "between 0 and 1 and add up to 1. These are the attention weights.",
     "dS = P * (dP - D) is the softmax's backward: a weight near 0 passes almost no gradient "
     "back to its score."},
};

// The words for the normaliser of step 9 or b9.
const NormaliserWords& words_of(const Step& step) {
    const Normaliser* normaliser = step.facts.normaliser;
    const std::string name = (normaliser != nullptr ? *normaliser : default_normaliser()).name;
    for (const NormaliserWords& words : normaliser_words) {
        if (words.name == name) return words;
    }
    throw Error("internal error: no words for the normaliser " + name);
}

// Step 0 of a model: a learned position table (--model, GPT-2) or positions left to RoPE.
std::string embedding(const Step& step) {
    if (step.expression.find("position_embedding") != std::string::npos)
        return "Each token becomes its row of the token embedding table plus the row of the "
               "position embedding for its place, so x holds one d_model vector per position "
               "that says both what and where the token is.";
    return "Each token becomes its row of the token embedding table, so x holds one d_model "
           "vector per position that says what the token is. Where it is comes later: RoPE "
           "rotates each query and key by its position (step 5).";
}

// The block's norms: LayerNorm or RMSNorm, by the step's name.
std::string normalisation(const Step& step) {
    if (step.name == "rms_norm")
        return "RMS normalisation divides each token's vector by its root mean square, then "
               "multiplies by a learned gain; unlike LayerNorm it neither subtracts the mean nor "
               "adds a bias. It keeps the numbers in a steady range from layer to layer.";
    return "Layer normalisation rescales each token's vector to mean 0 and variance 1, then "
           "applies a learned gain and bias. It keeps the numbers in a steady range from layer "
           "to layer.";
}

// Steps 1-3 and 14 (and the model's head): what each linear layer makes.
std::string projection(const Step& step) {
    if (step.kind == StepKind::OutputProject)
        return "W_o mixes the heads. Each output feature is a weighted sum over all "
               "h*d_k features of the concatenation, so what one head found can be "
               "combined with what the others found. Without this step the heads would "
               "stay side by side, unmixed. The output has the input's shape (B, N, "
               "d_model), ready for the residual connection.";
    if (step.kind == StepKind::Logits)
        return "The last linear layer scores every character of the vocabulary at every "
               "position. The softmax of the last row of these logits is the model's "
               "prediction for the next character.";
    if (step.kind == StepKind::LatentProject || step.operand == Operand::K)
        return "The same kind of linear layer makes a key for every key/value position: "
               "K = x W_k^T (+ b_k). A key says what a position offers; a query and a key "
               "that point the same way will give a large score at step 6.";
    if (step.operand == Operand::V)
        return "A third linear layer makes the values: V = x W_v^T (+ b_v). The values "
               "are what a position hands over once a query has decided how much to "
               "attend to it (step 10).";
    return "A linear layer turns each token's d_model features into a query: Q = x "
           "W_q^T (+ b_q). One matrix product makes the queries of all h heads at "
           "once, side by side in the last dimension. A query says what this token is "
           "looking for. The projections are where most of the multiply-adds go.";
}

// What the view or transpose does to the heads' layout.
std::string moved_heads(const Step& step) {
    switch (step.kind) {
        case StepKind::SplitHeads:
            return "view splits the last dimension into h heads of d_k features: (B, N, d_model) "
                   "becomes (B, N, h, d_k). No byte moves. The same memory is read with new "
                   "strides, which view may do because the tensor is contiguous.";
        case StepKind::JoinHeads:
            return "view joins the heads again: (B, N, h, d_k) is read as (B, N, d_model), each "
                   "token's h head outputs side by side. This needs no copy only because step 12 "
                   "made the memory contiguous; on the transposed tensor view would fail.";
        case StepKind::MoveHeads:
            if (step.operand == Operand::Qkv)
                return "permute reorders the fused tensor's dimensions so that the choice of q, "
                       "k or v comes first and each head owns an (N, d_k) matrix. Like "
                       "transpose, it only rewrites strides.";
            return "transpose swaps the token and head dimensions so that each head owns an "
                   "(N, d_k) matrix: (B, N, h, d_k) becomes (B, h, N, d_k). Only the strides are "
                   "swapped and nothing is copied, which is why the trace now says "
                   "non-contiguous.";
        default:  // MergeHeads
            return "transpose swaps heads and tokens back, (B, h, N, d_k) to (B, N, h, d_k), so "
                   "each token's heads lie next to each other again. Only the strides change, so "
                   "the result is non-contiguous.";
    }
}

// How the heads are moved: split and moved forward (4, 5), or back and joined (11, 13).
std::string heads(const Step& step) {
    return moved_heads(step) +
           " The einops pattern names every axis: parentheses mark axes stored together in one "
           "dimension, so the pattern says which dimension is split, moved or joined.";
}

// A step of the backward pass: the gradient of the forward step it undoes.
std::string backward(const Step& step) {
    switch (step.kind) {
        case StepKind::GradOutput:
            return "The backward pass starts from dOut, the gradient of the scalar L = sum of "
                   "output * dOut. It walks the forward steps in reverse, b14 down to b0; every "
                   "gradient has the shape of the tensor it belongs to.";
        case StepKind::WeightGrad:
            return "y = x W^T + b gives dW = dY^T X: each weight's gradient sums, over every "
                   "batch row and position, the gradient at its output times the input it "
                   "multiplied. The sum over B and N is the inner dimension of one product.";
        case StepKind::BiasGrad:
            return "The bias was added to every row, so its gradient is dY summed over the "
                   "batch and the positions.";
        case StepKind::InputGrad:
            return "dX = dY W sends the gradient back through the linear layer to what it "
                   "read: the forward product with W used the other way round.";
        case StepKind::ValueGrad:
            return "context = P V, so dV = P^T dO_h: each value collects the output gradients "
                   "of the queries that attended to it, weighted by how much they attended.";
        case StepKind::WeightsGrad:
            return "dP = dO_h V^T: how L changes with each attention weight, the query's output "
                   "gradient dotted with that key's value.";
        case StepKind::RowDot:
            return "The softmax's Jacobian per row is diag(P) - P P^T, so dS = P * (dP - D) "
                   "with D = rowsum(dP * P), formed from the stored P as PyTorch forms it. "
                   "Because O_h = P V, D also equals rowsum(dO_h * O_h): d_v products per row "
                   "instead of M. FlashAttention-2 and --attention streaming use that form, so "
                   "their backward needs no stored P.";
        case StepKind::SoftmaxGrad:
            return words_of(step).backward;
        case StepKind::MaskGrad:
            return "The mask added constants (0, a bias, or -inf), so the gradient passes "
                   "unchanged. A blocked key has P = 0, so its dS is already 0. A row with "
                   "every key blocked has NaN weights and NaN gradients, as in PyTorch.";
        case StepKind::ScaleGrad:
            return "Multiplying by a constant multiplies the gradient by the same constant. "
                   "The soft-cap C tanh(s / C) has the derivative 1 - tanh^2, near 0 where "
                   "the cap saturates.";
        case StepKind::QueryGrad:
            return "scores = Q K^T, so dQ = dscores K: each query's gradient is a weighted sum "
                   "of the keys it scored.";
        case StepKind::KeyGrad:
            return "dK = dscores^T Q: each key's gradient is a weighted sum of the queries "
                   "that scored it.";
        case StepKind::AttendGrad:
            return "The streaming backward keeps no P: for each tile of keys and queries it "
                   "recomputes the scores, P = exp(s - lse) from the row log-sum-exp the "
                   "forward kept, dP = dO_h V^T and dS = P (dP - D), and adds that tile's "
                   "share to dQ, dK and dV at once.";
        case StepKind::GroupSum:
            return "With grouped-query attention h/G query heads read one K/V head, as if it "
                   "were repeated. The adjoint of a repeat is a sum: each K/V head's gradient "
                   "adds those of its query heads, in head order, so every thread count gives "
                   "the same bits.";
        case StepKind::AppendGrad:
            return "The appended key/value rows are split off again: bias_k's and bias_v's "
                   "gradients are their row summed over the batch; add_zero_attn's zero row "
                   "has no parameter, so its gradient is dropped.";
        case StepKind::InputSum:
            return "x fed more than one projection (query, key and value; in MLA q_proj and "
                   "kv_a_proj_with_mqa), so its gradient is the sum of the paths: what PyTorch "
                   "accumulates into x.grad.";
        case StepKind::Rope:
            return "A rotation's transpose is the rotation by the opposite angle, so the "
                   "gradient is rotated back.";
        case StepKind::AssembleHeads:
            return "Each head's query and key were put together from parts, so their gradients "
                   "are split into the same parts and laid out again as q_proj and kv_b_proj "
                   "wrote them. k_pe was one key expanded to every head; the adjoint of an "
                   "expand is a sum, so dk_pe adds every head's share.";
        case StepKind::LatentProject:
            return "The latent and the RoPE key came out of one projection, side by side, so "
                   "their gradients are put side by side again: one backward of "
                   "kv_a_proj_with_mqa then gives its weight's gradient and x's.";
        case StepKind::Gate:
            return "The gate's backward: concat = O * gate passes dconcat * gate back to the "
                   "heads, and gives the gate dconcat * O, summed over a head's columns when one "
                   "gate serves the whole head. The sigmoid's slope gate * (1 - gate) turns that "
                   "into dg, whose backward through W_g adds a fourth path to x_q's gradient.";
        case StepKind::LatentNorm:
        case StepKind::QkNorm:
            return "RMSNorm's backward: with n = x / rms(x) and g = dy * weight, dx = (g - n "
                   "mean(g * n)) / rms(x); the weight's gradient sums dy * n over every row.";
        default:
            return "The backward of a view, transpose or stack undoes it: the gradient is "
                   "read with the forward's layout change reversed. Only reshape of a "
                   "non-contiguous gradient copies.";
    }
}

}  // namespace

std::string explanation(const Step& step) {
    if (step.backward) return backward(step);
    switch (step.kind) {
        case StepKind::Project:
        case StepKind::LatentProject:
        case StepKind::OutputProject:
        case StepKind::Logits:
            return projection(step);
        case StepKind::SplitHeads:
        case StepKind::MoveHeads:
        case StepKind::MergeHeads:
        case StepKind::JoinHeads:
            return heads(step);
        case StepKind::Input:
            return "The inputs as they arrive: B sequences of N tokens (M key/value positions in "
                   "cross-attention), each token a vector of d_model numbers. Nothing is computed "
                   "yet; every later shape is derived from these.";
        case StepKind::Embed:
            return embedding(step);
        case StepKind::Unbind:
            return "unbind takes Q, K or V out of the fused tensor by its first index. Each is a "
                   "view into the same memory, not a copy. einops does steps 4, 5 and this in "
                   "one rearrange, its pattern shown, and unpacks the leading three axis: "
                   "q, k, v = rearrange(qkv, ...).";
        case StepKind::Append:
            return "An extra key and value position is appended to every sequence (the learned "
                   "bias_k and bias_v, or a row of zeros), so each query has one more key it may "
                   "attend to. Appending means copying K and V into a longer tensor.";
        case StepKind::QkNorm:
            return "QK-norm divides each head's query and key vectors by their root mean square "
                   "and multiplies by a learned gain. This keeps the dot products of step 6 from "
                   "growing large as training goes on.";
        case StepKind::Rope:
            return "RoPE rotates pairs of features of each query and key by angles proportional "
                   "to the position. The dot product of a rotated query and key then depends on "
                   "how far apart they are, which is how the scores learn about order.";
        case StepKind::Scores:
            return "Every query is compared with every key by a dot product: scores = Q K^T. Per "
                   "head this gives an (N, M) table in which row i says how well query i matches "
                   "each key. This product and the one at step 10 grow with N*M.";
        case StepKind::Scale:
            return "The scores are divided by sqrt(d_k). A dot product of d_k random terms has a "
                   "variance about d_k times that of one term, and large scores would make the "
                   "softmax put nearly all weight on one key, where its gradients vanish.";
        case StepKind::Mask:
            return "Masking sets the score of every key a query may not see to -inf: future "
                   "tokens under a causal mask, padding, or what an attn_mask blocks. After the "
                   "softmax those keys get weight exactly 0. Position biases such as ALiBi are "
                   "added here too. Without a mask this step changes nothing.";
        case StepKind::Softmax:
            return words_of(step).forward;
        case StepKind::Context:
            return "Each query's result is the weighted average of the value vectors: context = "
                   "weights V, (N, M) times (M, d_k) per head. A key with weight 0.9 contributes "
                   "nine tenths of its value.";
        case StepKind::Attend:
            return "Steps 6 to 10 in one pass over tiles of keys: scores, scale, mask, then an "
                   "online softmax that keeps a running maximum and sum while it adds up the "
                   "values. The result is the same, but the (N, M) weights are never stored.";
        case StepKind::Contiguous:
            return "contiguous() copies the transposed context into new memory in its new order. "
                   "It is the one real copy of the layer, and it is needed because view cannot "
                   "merge two dimensions whose strides do not line up.";
        case StepKind::Concat:
            return "The heads' results are placed side by side along the features: [head_0, ..., "
                   "head_h-1] gives (B, N, h*d_k) = (B, N, d_model). Writing them into one tensor "
                   "is a copy.";
        case StepKind::Gate:
            return "Gated attention (Qwen3-Next, Qwen3.5): a sigmoid gate computed from the query "
                   "input scales each head's output before W_o mixes the heads. A gate near 0 "
                   "switches that part of a head off for this token, so a head need not dump its "
                   "attention on a sink token to say nothing. Element-wise, every column of the "
                   "concat has its own gate; head-wise, one gate per head scales its d_k columns.";
        case StepKind::Cache:
            if (step.facts.mla) {
                return "In MLA decoding, the new token's compressed latent and its rotated RoPE "
                       "key are appended to the cache: one small vector shared by every head, "
                       "instead of a key and a value per head. Each head's keys and values are "
                       "made from the cached latents when the query needs them.";
            }
            return "In decoding, the new token's key and value are appended to the KV cache, so "
                   "the keys and values of earlier tokens are never computed again. The new query "
                   "then attends to everything the cache holds.";
        case StepKind::Quantise:
            return "A quantised KV cache keeps each cached value as a small integer code: a "
                   "group of values shares a zero point (its minimum) and a scale (its range "
                   "over the largest code), so int4 holds a value in 4 bits instead of 32. "
                   "KIVI groups keys per channel along the tokens, because a few channels of K "
                   "carry large values, and values per token; the newest tokens stay float until "
                   "a group fills. Attention then reads the dequantised values.";
        case StepKind::QuantError:
            return "The same step computed over the float cache, subtracted: what quantising "
                   "the cache changed here. The scores move by q times the keys' rounding "
                   "error, the softmax turns that into moved weights, and the weights times "
                   "the values' error move the output.";
        case StepKind::LatentNorm:
            return "RMSNorm divides each vector by its root mean square and multiplies by a "
                   "learned gain. In multi-head latent attention it steadies the compressed latent "
                   "that the cache keeps instead of full keys and values.";
        case StepKind::LatentUp:
            return "kv_b_proj turns the cached latent back into every head's keys (the part "
                   "without position) and values. This is the naive form of latent attention: "
                   "the heads then hold keys and values as ordinary multi-head attention does.";
        case StepKind::AssembleHeads:
            return "Each head's query and key are put together from two parts, the part without "
                   "position and the rotated RoPE part; the RoPE part of the key is one vector "
                   "shared by every head. Putting the parts side by side is a copy.";
        case StepKind::AbsorbedWeights:
        case StepKind::AbsorbedOutput:
            return "The absorbed form computes the same attention without making keys and "
                   "values: W_UK is folded into the queries and W_UV into W_o, so every head "
                   "reads the cached latent directly. It serves here as a check on the steps "
                   "above; its largest difference from them is shown.";
        case StepKind::Norm:
            return normalisation(step);
        case StepKind::Residual:
            return "The residual connection adds the sublayer's result to its input. Each layer "
                   "then only has to learn a change to what it receives, and the signal passes "
                   "straight through the stack.";
        case StepKind::FfnIn:
            return "The feed-forward network's first linear layer widens each token's vector from "
                   "d_model to d_ff features. Unlike attention, it looks at one token at a time.";
        case StepKind::Gelu:
            return "GELU, a smooth version of ReLU, bends the widened features, so the "
                   "feed-forward network can compute more than a linear function of its input.";
        case StepKind::FfnOut:
            return "The second linear layer brings the feed-forward result back from d_ff to "
                   "d_model features, the width the residual connection needs.";
        case StepKind::GradOutput:
        case StepKind::WeightGrad:
        case StepKind::BiasGrad:
        case StepKind::InputGrad:
        case StepKind::ValueGrad:
        case StepKind::WeightsGrad:
        case StepKind::RowDot:
        case StepKind::SoftmaxGrad:
        case StepKind::MaskGrad:
        case StepKind::ScaleGrad:
        case StepKind::QueryGrad:
        case StepKind::KeyGrad:
        case StepKind::AttendGrad:
        case StepKind::GroupSum:
        case StepKind::AppendGrad:
        case StepKind::InputSum:
            return backward(step);
        case StepKind::LossGrad:
            return "The model's backward starts from the loss, the mean cross-entropy of "
                   "predicting each next character. Its gradient at the logits is the softmax "
                   "minus 1 at the right character, divided by the number of positions: every "
                   "wrong guess is pushed down by its probability, the right one up.";
        case StepKind::EmbedGrad:
            return "An embedding is a table lookup, so its gradient goes back to the rows that "
                   "were read: each position's gradient is added to its token's row and to its "
                   "place's row of the position table. Rows never read get zero.";
        case StepKind::Layer:
            return "One transformer layer: attention lets the positions exchange information, "
                   "then the feed-forward network works on each position alone, each with a "
                   "residual connection around it.";
    }
    return "";
}

}  // namespace mha
