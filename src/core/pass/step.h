#pragma once
// The Step record the forward pass reports, and the Tracer that observes it.
// Nothing here prints: printers are Tracers that live in src/show/.

#include "core/ops/masks.h"
#include "core/sizes.h"
#include "core/tensor/tensor.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mha {

using Dims = std::vector<std::string>;  // a name for every dimension of a tensor

// A sliding window W with S sinks, and the cache it needs over `length` positions.
struct WindowFacts {
    std::size_t window = 0, sinks = 0;  // W, S
    std::size_t length = 0;             // the positions there are: M, or t in decode
    std::size_t kept = 0;               // of them, the ones a query can still see
    std::uint64_t kept_bytes = 0;       // K and V of the kept positions
    std::uint64_t full_bytes = 0;       // K and V of all `length`
};

// RoPE on Q at step 5: the pairs, the base, and the angles of the first pairs.
struct RopeFacts {
    bool half = true;    // half layout (x[i], x[i + d_k/2]); else interleaved
    double theta = 0.0;  // the base
    std::size_t d_k = 0;
    std::size_t n = 0, m = 0;  // N queries at positions M-N..M-1, M keys at 0..M-1
    std::size_t pairs = 0;     // d_k / 2
    std::vector<std::pair<std::size_t, std::vector<double>>> angles;  // (p, p·inv_freq[i] of
                                                                      // the first pairs)
    bool scaled = false;  // inv_freq stretched (linear or llama3 scaling) after T^(-2i/d_k)
};

// Key/value positions appended to K and V after the projections.
struct AppendedFacts {
    std::size_t from = 0, to = 0;  // M before and after
    bool bias_kv = false;          // add_bias_kv: bias_k and bias_v
    bool zero_attn = false;        // add_zero_attn: a zero key and value
};

// One token of the decode form.
struct TokenFacts {
    std::size_t position = 0;           // 1-based: token `position` of `count`
    std::size_t count = 0;              // T
    std::uint64_t cache_bytes = 0;      // K and V held in the cache once this token is in
    bool qk_norm = false;               // step 2: q_t and k_t are RMS-normalised before caching
    bool rope = false;                  // step 2: q_t and k_t are rotated to position - 1 first
    std::optional<WindowFacts> window;  // step 2: the positions the window still reads
};

// Chunked prefill's step 2: chunk `index` of `count` brings rows [first, first + size) into
// the cache, which then holds K and V for first + size positions.
struct ChunkFacts {
    std::size_t index = 0, count = 0;  // 1-based: chunk `index` of `count`
    std::size_t first = 0, size = 0;   // its rows' positions: [first, first + size)
    std::uint64_t cache_bytes = 0;     // K and V held in the cache once the chunk is in
    bool qk_norm = false;              // q and k are RMS-normalised before caching
    bool rope = false;                 // q and k are rotated to their positions before caching
};

// Where one position of a paged KV cache lives: block table entry t // S holds `block`,
// and the position is its slot t % S.
struct PagedPosition {
    std::size_t position = 0, entry = 0, block = 0, slot = 0;
};

// A paged KV cache's step 2 (--kv-block-size) once positions [first, last] are written.
struct PagedFacts {
    std::size_t block_size = 0;            // S
    std::size_t pool_blocks = 0;           // B · ceil(T / S) physical blocks
    std::size_t sequences = 0;             // B: a block table each
    bool in_order = true;                  // false: the pool's blocks are a shuffled permutation
    std::size_t held = 0;                  // positions written in each sequence: last + 1
    std::vector<std::vector<std::size_t>> tables;  // (B) each sequence's block table, its
                                                   //  entries in use: ceil(held / S)
    std::vector<PagedPosition> positions;  // sequence 0's first and last position written
    std::uint64_t block_bytes = 0;         // one block of K and one of V: G·S·(d_k + d_v)·4
    std::uint64_t unused_bytes = 0;        // the last blocks' slots not written yet, all sequences
    bool latent = false;                   // MLA's latent cache: blocks of c_kv and k_pe
};

// --kv-quant: one group quantised at a step, batch 0's first K/V head, to follow by hand.
struct QuantGroupExample {
    std::size_t first = 0;   // its first position (channel groups: of channel 0)
    float scale = 0.0f, zero = 0.0f;
    std::vector<float> x;      // (g) the float values
    std::vector<float> ratio;  // (g) (x − m) / s, before rounding (0 when s = 0)
    std::vector<float> x_hat;  // (g) s·q + m
};

// --kv-quant: one tensor of decode's quantised cache (K or V) at step 2, its scales, zero
// points and dequantised values, and what the whole cache holds then.
struct KvQuantFacts {
    enum class Part { Zero, Scale, Dequantised, Cache };  // the step's tensor: m, s, x̂, or
    Part part = Part::Cache;                              // none (the cache's bytes alone)
    char tensor = 'K';              // 'K' or 'V'
    unsigned bits = 0;              // 8 or 4
    std::size_t group = 0;          // elements that share one scale and zero point
    bool along_tokens = false;      // channel groups run along the tokens; token groups along d_k
    std::size_t quantised = 0;      // positions [0, quantised) are held as codes
    std::size_t length = 0;         // positions cached
    std::size_t residual = 0;       // the last R positions stay float
    std::uint64_t code_bytes = 0;   // the codes of K and V, bits each
    std::uint64_t scale_bytes = 0;  // their scales and zero points, float32
    std::uint64_t float_bytes = 0;  // the positions K and V hold in float
    std::uint64_t plain_bytes = 0;  // all cached positions of K and V in float
    std::optional<QuantGroupExample> example;  // the first group quantised now; none when dry
};

// --kv-quant: how far a step moved from the run over the float cache (decode 6, 9, 14).
struct QuantErrorFacts {
    enum class Of { Scores, Weights, Output } of = Of::Output;  // which step moved
    std::optional<double> max_abs;   // max |quantised − float|; empty in a dry run
    std::optional<double> relative;  // max_abs over the largest |float| value
    struct Moved {
        std::size_t batch = 0, head = 0, key = 0;
        float before = 0.0f, after = 0.0f;  // the float run's weight and the quantised run's
    };
    std::optional<Moved> moved;  // weights: the one that moved most
};

// Speculative verification's steps 2, 8 and 14: a draft of K tokens after `prefix` cached
// ones, draft token i hanging from parents[i] (-1: the last cached token) at position
// prefix + depths[i].
struct DraftFacts {
    std::size_t prefix = 0;                // P: the tokens cached before the draft
    std::vector<std::ptrdiff_t> parents;   // (K) an earlier draft token, or -1
    std::vector<std::size_t> depths;       // (K) 0 for a child of the last cached token
    std::uint64_t cache_bytes = 0;         // K and V held in the cache once the draft is in
    bool qk_norm = false;                  // q and k are RMS-normalised before caching
    bool rope = false;                     // q and k are rotated to their positions first
};

// One query row of the streaming path after one tile of keys (core/pass/flash_row.h).
struct FlashTile {
    std::size_t first_key, keys;  // this tile: keys [first_key, first_key + keys)
    float tile_max;               // the largest of its scaled, masked scores (−inf: all blocked)
    float running_max;            // m after the tile: the largest score so far
    float shrink;               // e^(m_before − m_after): what the sum and output were scaled by
    float running_sum;          // l after the tile: Σ e^(score − m) over the keys so far
    std::vector<float> output;  // (d_k) o after the tile: Σ e^(score − m) v, not divided by l
};

// Streaming 10 with a traced row: query `row` of batch 0, head `head`, tile by tile.
struct FlashFacts {
    std::size_t row = 0, head = 0;
    std::size_t key_tile = 0;  // the streaming path's tile width
    std::vector<FlashTile> tiles;
    std::vector<float> context;   // (d_k) o / l after the last tile
    std::vector<float> standard;  // (d_k) the same row as the standard path computes it
    double max_difference = 0.0;  // max |context − standard| (0 when both are NaN)
};

// One query row of the streaming backward after one tile of keys (core/pass/flash_row.h).
struct FlashBackTile {
    std::size_t first_key, keys;  // this tile: keys [first_key, first_key + keys)
    float weight_sum;             // Σ P over the tile, P = e^(score − lse) recomputed
    float ds_sum;                 // Σ dS over the tile (over the whole row: 0 up to rounding
                                  //  when there is no soft-cap, since Σ P (dP − D) = D − D)
    std::vector<float> dq;        // (d_k) dQ's row after the tile: Σ dS k over the keys so far
};

// The streaming backward with a traced row: query `row` of batch 0, head `head`, tile by tile.
struct FlashBackFacts {
    std::size_t row = 0, head = 0;
    std::size_t key_tile = 0;  // the streaming path's tile width
    float lse = 0.0f;          // the forward's row log-sum-exp, all the backward keeps of P
    float d = 0.0f;            // D = rowsum(dO ∘ O), from the output
    float d_standard = 0.0f;   // rowsum(dP ∘ P) from the whole row of P: equal to D
    std::vector<FlashBackTile> tiles;
    std::vector<float> dq;        // (d_k) dQ's row after the last tile (NaN if every key blocked)
    std::vector<float> standard;  // (d_k) the same row as the standard backward computes it
    double max_difference = 0.0;  // max |dq − standard| (0 when both are NaN)
};

// The MLA form (core/pass/mla.h): its sizes, and what only the computation knows.
struct MlaFacts {
    std::size_t heads = 0, d_nope = 0, d_rope = 0, d_latent = 0, d_v = 0;  // h, d_h, d_R, d_c, d_v
    std::size_t length = 0;                // N: the tokens of the sequence
    std::size_t gqa_kv_heads = 0;          // the cache ledger's GQA row, 0 for none
    bool ledger = false;                   // the cache step: MHA / GQA / MQA / MLA bytes per token
    bool absorbed = false;                 // a step of the absorbed form
    bool latent_cache = false;             // a step of decoding with the latent cache
    std::optional<double> max_difference;  // absorbed vs naive, once computed
};

// What a step establishes beyond its layout, as numbers and kinds: core/ computes them,
// show/notes.h words them. Every field is empty unless the step has that fact.
struct StepFacts {
    std::vector<std::size_t>
        kv_head_of_query;           // 5 K, G < h: entry i is the K/V head query head i reads
    std::optional<Sizes> kv_costs;  // 5 V, G < h: the sizes whose MHA/GQA/MQA costs to compare
    std::optional<std::pair<std::size_t, std::size_t>>
        reads_kv_head;         // per-head 2: (query head, K/V head)
    std::size_t kv_group = 0;  // 6, G < h: h / G query heads share each K/V head
    std::optional<std::uint64_t> stored_score_bytes;  // 6, standard path: the scores it stores
    std::optional<std::size_t> scale_d_k;             // 7: d_k
    std::optional<double> scale_base;                 // 7: S when the scores are divided by sqrt(S)
    std::optional<float> scale_factor;  // 7: 1/sqrt(d_k); empty when the scores are not scaled
    std::optional<double> softcap;      // 7 (streaming 10): the soft-cap C
    const Normaliser* normaliser = nullptr;  // 9 and b9: step 9's; null: the default
    std::optional<RopeFacts> rope;      // 5 rope on Q: how the rotation turns
    std::optional<Masks> masks;         // 8 (per-head 9, streaming 10): what the mask step applies
    std::size_t mask_queries = 0, mask_keys = 0;  // with masks: the N queries and M keys it masks
    std::vector<double> alibi_slopes;             // with ALiBi: the slope m_i of every head
    std::optional<WindowFacts> window;      // with a window: the keys it keeps, the cache it needs
    std::optional<AppendedFacts> appended;  // 3 append: the positions appended to K and V
    std::optional<std::uint64_t> unstored_score_bytes;  // streaming 10: the scores it never stores
    std::size_t query_tile = 0, key_tile = 0;           // streaming 10: its tiles
    std::optional<FlashFacts> flash;          // streaming 10 with --flash-row: one row's tiles
    std::optional<MlaFacts> mla;              // the MLA form's cache, attention and output steps
    std::optional<TokenFacts> token;          // decode 2, 9, 14 (10 when streamed)
    std::optional<ChunkFacts> chunk;          // chunked prefill 2
    std::optional<DraftFacts> draft;          // speculative verification 2, 8, 14
    std::optional<PagedFacts> paged;          // decode and chunked prefill 2, paged
    std::optional<KvQuantFacts> kv_quant;     // decode 2 with --kv-quant: a quantised tensor
    std::optional<QuantErrorFacts> quant_error;  // decode with --kv-quant: the error carried
    std::optional<std::uint64_t> parameters;  // block steps: the parameters the step uses
    bool value_heads = false;  // 14: the concat's head blocks are d_v wide (MLA), not d_k
    std::optional<double> rms_eps;  // a norm step that is an RMSNorm: its ε (else a LayerNorm)
    std::string activation;  // an activation step other than the exact GELU: "gelu_tanh",
                             //  "F.silu" (gated: times the up projection)
    bool gated = false;      // that activation gates the up projection (SwiGLU, GeGLU)
    std::vector<std::string> sources;  // where the step's numbers came from: a checkpoint's
                                       //  config.json keys and tensor names, in words
    // The backward's (Step::backward):
    std::optional<double> row_dot_difference;  // b9 D: max |rowsum(dO_h ∘ O_h) − D| measured
    std::size_t summed_heads = 0;              // GroupSum: the h/G query heads summed per K/V head
    bool blocked_zero_gradient = false;        // b8: a mask blocks keys, where P = 0 makes dS = 0
    std::optional<FlashBackFacts> flash_back;  // streamed b10-b6 with --flash-row: one row's tiles
};

// What a step is. The plan sets it; views and notes switch on it, never on a step's name,
// tensor or number (which are worded for the reader and may change).
enum class StepKind {
    Input,            // 0   an input: x, x_q, x_k, x_v
    Embed,            // 0   the model's token and position embeddings
    Project,          // 1-3 Q, K or V from the inputs (whole, fused as qkv, or one head's slice)
    Cache,            // decode 2: the new token's K and V written into the cache
    Quantise,         // decode 2, --kv-quant: a cache tensor's scales, zero points, dequantised
    QuantError,       // decode 6, 9, 14, --kv-quant: the quantised run minus the float run
    Append,           // 3   add_bias_kv / add_zero_attn positions appended to K and V
    LatentProject,    // MLA 2: the latent and the shared RoPE key from x
    LatentNorm,       // MLA 2: the latent's RMSNorm (what the cache keeps)
    LatentUp,         // MLA 3: every head's k_nope and v up-projected from the latent
    AssembleHeads,    // MLA 5: each head's Q, K (k_pe shared) or V put together from its parts
    SplitHeads,       // 4   view: the last dimension split into heads
    MoveHeads,        // 5   transpose / permute: the head dimension moved forward
    Unbind,           // 5   fused: Q, K and V taken out of qkv
    QkNorm,           // 5   RMSNorm of Q or K per head
    Rope,             // 5   the rotary position embedding
    Scores,           // 6   Q Kᵀ
    Scale,            // 7   / sqrt(d_k), soft-cap
    Mask,             // 8   + mask
    Softmax,          // 9   the attention weights
    Context,          // 10  weights V
    Attend,           // 10  6-10 streamed, tile by tile
    MergeHeads,       // 11  transpose back
    Contiguous,       // 12  the one copy
    JoinHeads,        // 13  view: the heads read side by side, nothing copied
    Concat,           // 13  per-head: the heads copied side by side
    Gate,             // 13  --gate: sigmoid(x W_gᵀ + b_g), then the concat times it
    OutputProject,    // 14  W_o
    AbsorbedWeights,  // MLA 9: the absorbed form's weights, compared with the pass's
    AbsorbedOutput,   // MLA 14: the absorbed form's output, compared with the pass's
    Norm,             // block / model: a LayerNorm
    Residual,         // block: x + sublayer(x)
    FfnIn,            // block: linear1
    Gelu,             // block: the activation
    FfnOut,           // block: linear2
    Layer,            // model: one whole layer
    Logits,           // model: the head to the vocabulary
    // The backward's own kinds (Step::backward); its views, transposes, RoPE and QK-norm
    // steps keep the kind of the forward step they undo.
    GradOutput,   // b14 dOut: the gradient of L = Σ output ∘ dOut the backward starts from
    LossGrad,     // model b23 dlogits: the cross-entropy's gradient, where its backward starts
    EmbedGrad,    // model b0: an embedding table's gradient, each position's row scattered back
    WeightGrad,   // dW = dYᵀ X of a projection, or another parameter's gradient (d q_norm)
    BiasGrad,     // db = dY summed over the batch and the positions
    InputGrad,    // dX = dY W: the gradient through a projection to what it read
    ValueGrad,    // b10 dV = Pᵀ dO_h
    WeightsGrad,  // b10 dP = dO_h Vᵀ
    RowDot,       // b9  D = rowsum(dO_h ∘ O_h), which equals rowsum(dP ∘ P)
    SoftmaxGrad,  // b9  dS = P ∘ (dP − D)
    MaskGrad,     // b8  the mask adds constants: dS passes, zero where P is 0
    ScaleGrad,    // b7  dscores = dS · factor (· (1 − tanh²) under a soft-cap)
    QueryGrad,    // b6  dQ = dscores K
    KeyGrad,      // b6  dK = dscoresᵀ Q, one per query head
    AttendGrad,   // b10-b6 streamed: dQ, dK or dV of one pass over tiles, P recomputed from lse
    GroupSum,     // b6, b10 GQA: a K/V head's gradient summed over the query heads reading it
    AppendGrad,   // b3  the appended rows' gradients (d bias_k, d bias_v) split from K's, V's
    InputSum,     // b0  self-attention: dx = dx_q + dx_k + dx_v
};

// Which of the attention's operands a step yields, when it yields one of them.
enum class Operand {
    None,  // not Q, K or V (scores, context, ...), or several at once (MLA's rotated parts)
    Q,
    K,
    V,
    Qkv,  // fused: Q, K and V in one tensor
};

// One tensor produced by one numbered step of the forward pass. Steps that act
// on Q, K and V alike (4 view, 5 transpose) report one Step per tensor.
struct Step {
    StepKind kind = StepKind::Input;  // what the step is (set by the plan)
    Operand operand = Operand::None;  // which of Q, K, V it yields (set by the plan)
    bool backward = false;            // a step of the backward pass; `number` is the forward
                                      // step it undoes
    int number = 0;                   // 0 for the inputs, then 1..14 as in docs/walkthrough.md
    std::string name;                 // what the step does: "project", "view", "softmax", ...
    std::string tensor;               // which tensor it yields: "Q", "scores", "output", ...
    std::string expression;           // the PyTorch expression, e.g. "Q.view(B, N, h, d_k)"
    std::string einops;               // the same rearrangement in einops notation, e.g.
                                      // "b n (h d) -> b n h d"; empty for other steps
    std::vector<std::string> dims;    // a name for every dimension: {"B", "h", "N", "d_k"}
    Shape shape;                      // the tensor's sizes, one per name in dims
    Strides strides;                  // in elements, as Tensor.stride() reports them
    bool contiguous = true;
    std::uint64_t copied_bytes = 0;          // bytes moved only to change the memory layout
    std::uint64_t macs = 0;                  // multiply-adds of the step's matrix products
    StepFacts facts;                         // what the step establishes; show/notes.h words it
    std::vector<std::vector<bool>> allowed;  // step 8: (N, M) keys each query may see, batch 0
                                             // head 0; empty when N or M is too large to draw
    const Tensor* value = nullptr;  // the tensor itself, valid only during on_step; null when
                                    // the step has no values (--shapes-only, a cache view)
};

class Tracer {
public:
    virtual ~Tracer() = default;
    // false: the forward pass does not even build the Step records
    virtual bool enabled() const { return true; }
    virtual void on_step(const Step& step) = 0;
};

// The default: observes nothing, so an untraced run pays nothing.
class NullTracer final : public Tracer {
public:
    bool enabled() const override { return false; }
    void on_step(const Step&) override {}
};

}  // namespace mha
