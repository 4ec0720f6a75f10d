// Speculative verification of a draft tree against a KV cache.
//
//   x (B, T, d_model): rows [0, P) the prefix, decoded token by token (decode()); rows
//   [P, T) the draft, K = T − P tokens, token i at position p_i = P + depth(i):
//     x_d = x[:, P:T]                                  (B, K, d_model)
//     q_d = x_d W_q.T + b_q   (B, K, h·d_k) -> (B, h, K, d_k)   row i rotated to p_i
//     k_d, v_d likewise       (B, K, G·d_k) -> cache[:, :, P:T], after the prefix's K and V
//     6-10 on (batch, head) units, draft token by draft token:
//       weights_i = softmax(q_i @ K_i.T / sqrt(d_k))   (B, h, 1, P + depth(i) + 1)
//       context_i = weights_i @ V_i
//     where K_i, V_i are what the tree mask leaves token i: the P cached positions, then its
//     ancestors and itself, root first, each at its position. These are exactly the keys and
//     values decoding the branch would have cached, in the same order, so each row sums what
//     decoding sums and gives its bits. The blocked keys are never read.
//     out_d = concat_d @ W_o.T + b_o                  (B, K, d_model)   (--gate: 13 first)

#include "core/forms/draft.h"

#include <algorithm>
#include <limits>

#include "core/error.h"
#include "core/forms/decode.h"
#include "core/forms/kv_cache.h"
#include "core/kv_heads.h"
#include "core/ops/rms_norm.h"
#include "core/pass/describe.h"
#include "core/pass/projection.h"
#include "core/pass/score_rules.h"
#include "core/pass/shape_checks.h"
#include "core/position/rope.h"

namespace mha {

namespace {

// The steps of the prefix's decoding, without its step 0: the draft's pass shows the whole x.
class WithoutInput final : public Tracer {
public:
    explicit WithoutInput(Tracer& tracer) : tracer_(tracer) {}
    bool enabled() const override { return tracer_.enabled(); }
    void on_step(const Step& step) override {
        if (step.kind != StepKind::Input) tracer_.on_step(step);
    }

private:
    Tracer& tracer_;
};

// Draft token i's branch: the draft tokens from the root down to i, i last.
std::vector<std::size_t> branch_of(const DraftTree& tree, std::size_t i) {
    std::vector<std::size_t> branch;
    for (std::ptrdiff_t node = std::ptrdiff_t(i); node >= 0; node = tree[std::size_t(node)])
        branch.push_back(std::size_t(node));
    std::reverse(branch.begin(), branch.end());
    return branch;
}

// x (B, L, G·d_k) viewed as heads (B, G, L, d_k), each row r normalised (QK-norm) and rotated
// to positions[r] (RoPE) as decoding places it: one row at a time, in place.
void place_rows(Tensor& x, std::size_t heads, const Tensor& norm,
                const std::vector<std::size_t>& positions, const ForwardOptions& o) {
    if (x.dry()) return;
    const std::size_t B = x.size(0), L = x.size(1), d_k = x.size(2) / heads;
    Tensor x_heads = x.view({B, L, heads, d_k}).transpose(1, 2);
    for (std::size_t r = 0; r < L; ++r) {
        Tensor row = x_heads.narrow(2, r, 1);  // (B, G, 1, d_k)
        if (!norm.empty()) rms_norm_rows(row, norm, o.qk_norm_eps);
        if (o.rope) apply_rope(row, *o.rope, positions[r]);
    }
}

// Writes rows `rows` of projected (B, L, G·d_k) into cache positions [first, first +
// rows.size()) of (B, G, T, d_k), in order.
void cache_branch(const Tensor& projected, const std::vector<std::size_t>& rows,
                  std::size_t first, Tensor& cache) {
    if (any_dry(projected, cache)) return;
    const std::size_t B = cache.size(0), G = cache.size(1), T = cache.size(2), d_k = cache.size(3);
    const std::size_t L = projected.size(1);
    for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t r = 0; r < rows.size(); ++r) {
            for (std::size_t g = 0; g < G; ++g) {
                const float* from = projected.data() + ((b * L + rows[r]) * G + g) * d_k;
                std::copy(from, from + d_k, cache.data() + ((b * G + g) * T + first + r) * d_k);
            }
        }
    }
}

// 0, 1, ..., n − 1.
std::vector<std::size_t> first_rows(std::size_t n) {
    std::vector<std::size_t> rows(n);
    for (std::size_t i = 0; i < n; ++i) rows[i] = i;
    return rows;
}

// Draft token i's weights (B, h, 1, P + depth + 1) into row P + i of all (B, h, T, T): the
// prefix's columns as they are, the branch's at its tokens' cache positions P + node.
void keep_branch_weights(const Tensor& part, std::size_t prefix, std::size_t i,
                         const std::vector<std::size_t>& branch, Tensor& all) {
    if (part.empty() || all.empty() || any_dry(part, all)) return;
    const std::size_t units = all.size(0) * all.size(1), T = all.size(2), m = part.size(3);
    for (std::size_t u = 0; u < units; ++u) {
        const float* from = part.data() + u * m;
        float* row = all.data() + (u * T + prefix + i) * T;
        std::copy(from, from + prefix, row);
        for (std::size_t e = 0; e < branch.size(); ++e) row[prefix + branch[e]] = from[prefix + e];
    }
}

// Throws mha::Error unless a draft of k tokens fits among the t decoded: 1 <= k <= t.
void check_draft_size(std::size_t k, std::size_t t) {
    if (k == 0 || k > t) {
        throw Error("a draft of " + std::to_string(k) + " tokens among the " + std::to_string(t) +
                    " decoded; the draft is the last K of the T tokens, 1 <= K <= T");
    }
}

// What the draft's steps say of it: the tree, its positions, the cache it fills.
DraftFacts draft_facts(const DraftTree& tree, const Sizes& s, const Weights& w,
                       const ForwardOptions& o) {
    DraftFacts facts;
    facts.prefix = s.seq_len - tree.size();
    facts.parents = tree;
    facts.depths = draft_depths(tree);
    facts.cache_bytes = macs_of({2, s.batch, s.kv_heads, s.seq_len, s.d_k(), sizeof(float)});
    facts.qk_norm = !w.q_norm.empty();
    facts.rope = o.rope.has_value();
    return facts;
}

// The draft tensors of one verification: its queries and keys placed, the cache, the weights.
struct Verification {
    Tensor q;           // (B, K, h·d_k) the draft's queries, each at its position
    Tensor k, v;        // (B, K, G·d_k) the draft's keys (placed) and values
    Tensor cache_k, cache_v;  // (B, G, T, d_k) the prefix's K and V, then the draft's
    Tensor concat;      // (B, K, h·d_k) the heads' contexts side by side
};

// Rows [0, P) of x (B, T, d_model) decoded token by token (decode(), its steps 2, 9 and 14 on
// the tracer) into result's first P rows, and their keys and values into the cache's first P
// positions, placed as decoding placed them. options.packed holds the packed weights.
void decode_prefix(const Weights& w, const Tensor& x, const Masks& masks,
                   const ForwardOptions& options, std::size_t P, Tracer& tracer, Verification& d,
                   ForwardResult& result) {
    const Tensor x_p = sequence_rows(x, 0, P, options.workspace);  // (B, P, d_model)
    WithoutInput prefix_tracer(tracer);
    const ForwardResult prefix = decode(w, {x_p, x_p, x_p}, masks, options, prefix_tracer);
    put_rows(prefix.output, 0, result.output);
    keep_weight_rows(prefix.weights, 0, result.weights);
    const std::vector<std::size_t> rows = first_rows(P);  // row t at position t
    Tensor k_p = project(x_p, w.w_k, w.b_k, options.threads, options.workspace, &options.packed->k);
    place_rows(k_p, d.cache_k.size(1), w.k_norm, rows, options);
    cache_branch(k_p, rows, 0, d.cache_k);
    cache_branch(project(x_p, w.w_v, w.b_v, options.threads, options.workspace, &options.packed->v),
                 rows, 0, d.cache_v);
}

// The draft's rows x_d (B, K, d_model) projected at once into d.q, d.k and d.v, q and k placed
// (QK-norm, RoPE) at their tokens' positions. options.packed holds the packed weights.
void project_draft(const Weights& w, const Tensor& x_d, const std::vector<std::size_t>& positions,
                   const Sizes& s, const ForwardOptions& options, Verification& d) {
    const PackedWeights& packed = *options.packed;
    d.q = project(x_d, w.w_q, w.b_q, options.threads, options.workspace, &packed.q);
    d.k = project(x_d, w.w_k, w.b_k, options.threads, options.workspace, &packed.k);
    d.v = project(x_d, w.w_v, w.b_v, options.threads, options.workspace, &packed.v);
    place_rows(d.q, s.heads, w.q_norm, positions, options);
    place_rows(d.k, s.kv_heads, w.k_norm, positions, options);
}

// 6-10 for draft token i: a query row per (batch, head) unit against the P cached positions
// and its branch, which are first written to cache positions [P, P + depth + 1), where its
// decoding would have them. Keeps its weights in result.weights' row P + i.
void attend_draft_token(Verification& d, const DraftTree& tree, std::size_t i,
                        const Masks& masks, const Sizes& s, const ForwardOptions& o,
                        ForwardResult& result) {
    const std::size_t B = s.batch, W = s.inner(), h = s.heads, d_k = s.d_k(), K = tree.size();
    const std::size_t P = s.seq_len - K;
    const std::vector<std::size_t> branch = branch_of(tree, i);
    const std::size_t length = P + branch.size(), position = length - 1;
    cache_branch(d.k, branch, P, d.cache_k);
    cache_branch(d.v, branch, P, d.cache_v);
    Sizes token_sizes = s;  // one query at `position` against the `length` keys it sees
    token_sizes.seq_len = 1;
    token_sizes.kv_len = length;
    const bool streamed = o.path == AttentionPath::Streaming;
    Tensor weights = streamed ? Tensor() : new_uninitialised(o.workspace, {B, h, 1, length});
    const std::size_t G = s.kv_heads, T = s.seq_len;
    const Units units{B * h, [&](std::size_t u) {
                          const std::size_t b = u / h, head = u % h;
                          const std::size_t g = kv_head_of(head, h, G);
                          const std::size_t row = (b * G + g) * T * d_k;
                          return AttentionUnit{
                              {d.q.data() + (b * K + i) * W + head * d_k, 1, d_k, d_k, 1},
                              {d.cache_k.data() + row, length, d_k, d_k, 1},
                              {d.cache_v.data() + row, length, d_k, d_k, 1},
                              unit_mask(masks, b, head, token_sizes),
                              streamed ? nullptr : weights.data() + u * length,
                              d.concat.data() + (b * K + i) * W + head * d_k,
                              d_k,
                              b,
                              head,
                              position};
                      }};
    if (!any_dry(d.q, d.cache_k, d.concat)) {
        result.fully_masked_rows += run_units(streamed ? UnitStep::Streamed : UnitStep::Attend,
                                              units, unit_math(s, o), o.threads);
    }
    keep_branch_weights(weights, P, i, branch, result.weights);
}

// 2: the draft's keys after the prefix's, K_cache[:, :, P:T], a view shown by its layout.
void show_draft_cache(const Verification& d, const Weights& w, const Sizes& s,
                      const DraftFacts& facts, PassTrace& trace) {
    const std::size_t P = facts.prefix, T = s.seq_len, K = T - P;
    trace.show(d.cache_k.without_values(), [&] {
        const std::size_t h = s.heads, G = s.kv_heads, d_k = s.d_k();
        Step step = described(StepKind::Cache, 2, "cache", "K_cache",
                              "K_cache[:, :, " + std::to_string(P) + ":" + std::to_string(T) +
                                  "] = x_d @ W_k.T" + bias_suffix(!w.b_k.empty(), "b_k"),
                              {"B", G == h ? "h" : "G", "t", "d_k"},
                              macs_of({s.batch, K, h * d_k + 2 * G * d_k, s.d_model}));
        step.facts.draft = facts;
        return step;
    });
}

// The tree mask as step 8 adds it, (K, T): 0 where draft token i sees key j, -inf elsewhere.
Tensor tree_mask_tensor(const DraftFacts& facts, Workspace* workspace) {
    const std::vector<std::vector<bool>> allowed = tree_mask(facts.parents, facts.prefix);
    const std::size_t K = allowed.size(), T = allowed.front().size();
    if (workspace != nullptr && workspace->is_dry()) return new_dry(workspace, {K, T});
    Tensor mask = new_uninitialised(workspace, {K, T});
    for (std::size_t i = 0; i < K; ++i) {
        for (std::size_t j = 0; j < T; ++j)
            mask.data()[i * T + j] = allowed[i][j] ? 0.0f : -std::numeric_limits<float>::infinity();
    }
    return mask;
}

// 8 and 9 (or 10 streamed): the tree mask, drawn, and what the draft's queries made of it.
void show_draft_attention(const Verification& d, const ForwardResult& result, const Masks& masks,
                          const Sizes& s, const ForwardOptions& o, const DraftFacts& facts,
                          PassTrace& trace) {
    const std::size_t B = s.batch, h = s.heads, T = s.seq_len, P = facts.prefix, K = T - P;
    const std::size_t d_k = s.d_k();
    std::uint64_t seen = 0;  // the keys all draft rows read
    for (std::size_t depth : facts.depths) seen += P + depth + 1;
    const Tensor mask = tree_mask_tensor(facts, o.workspace);
    trace.show(mask, [&] {
        Step step = described(StepKind::Mask, 8, "mask", "tree_mask",
                              "tree_mask[i, j] = 0 if key j is cached before the draft or on "
                              "draft i's branch, else -inf",
                              {"K", "T"});
        step.facts.draft = facts;
        if (K <= max_grid && T <= max_grid) step.allowed = tree_mask(facts.parents, P);
        return step;
    });
    const bool streamed = o.path == AttentionPath::Streaming;
    const Normaliser& normaliser = normaliser_of(masks);
    const std::string scores =
        "q_d @ K_cache.mT" + scale_suffix(o.scale, o.scale_base) + " + tree_mask";
    const Tensor shown = streamed ? d.concat.view({B, K, h, d_k}).transpose(1, 2)  // (B, h, K, d_k)
                                  : result.weights.narrow(2, P, K);                // (B, h, K, T)
    trace.show(shown, [&] {
        Step step = cached_attend_step(normaliser, scores, streamed, "K", "T", B, h, seen, d_k);
        if (masks.softcap > 0) step.facts.softcap = masks.softcap;
        return step;
    });
}

}  // namespace

DraftTree draft_chain(std::size_t k) {
    DraftTree tree(k);
    for (std::size_t i = 0; i < k; ++i) tree[i] = std::ptrdiff_t(i) - 1;
    return tree;
}

std::vector<std::size_t> draft_depths(const DraftTree& tree) {
    std::vector<std::size_t> depths(tree.size());
    for (std::size_t i = 0; i < tree.size(); ++i) {
        const std::ptrdiff_t parent = tree[i];
        if (parent < -1 || parent >= std::ptrdiff_t(i)) {
            const std::string given = "draft tree: token " + std::to_string(i) +
                                      "'s parent is " + std::to_string(parent);
            throw Error(i == 0 ? given + "; the first draft token hangs from the last cached "
                                         "token, -1"
                               : given + "; a parent is -1 (the last cached token) or an "
                                         "earlier draft token, 0 to " +
                                         std::to_string(i - 1));
        }
        depths[i] = parent < 0 ? 0 : depths[std::size_t(parent)] + 1;
    }
    return depths;
}

std::vector<std::vector<bool>> tree_mask(const DraftTree& tree, std::size_t prefix) {
    std::vector<std::vector<bool>> grid(tree.size(),
                                        std::vector<bool>(prefix + tree.size(), false));
    for (std::size_t i = 0; i < tree.size(); ++i) {
        std::fill(grid[i].begin(), grid[i].begin() + std::ptrdiff_t(prefix), true);
        for (std::size_t node : branch_of(tree, i)) grid[i][prefix + node] = true;
    }
    return grid;
}

ForwardResult verify_draft(const Weights& w, const Inputs& in, const Masks& masks,
                           const ForwardOptions& options, const DraftTree& tree, Tracer& tracer) {
    const Sizes s = check_pass(w, in, masks, options);
    check_form(Form::Decode, s, in.self_attention(), masks);
    const std::size_t B = s.batch, T = s.seq_len, E = s.d_model, h = s.heads, G = s.kv_heads,
                      d_k = s.d_k(), K = tree.size();
    check_draft_size(K, T);
    const std::vector<std::size_t> depths = draft_depths(tree);
    const std::size_t P = T - K;
    Workspace* const workspace = options.workspace;
    PassTrace trace(tracer);
    trace.show(in.x_q, [&] {
        return described(StepKind::Input, 0, "input", "x", "x", {"B", "T", "d_model"});  // 0
    });
    const PackedWeights own = options.packed ? PackedWeights{} : pack_weights(w);
    ForwardOptions packed_options = options;
    packed_options.packed = options.packed ? options.packed : &own;
    const PackedWeights& packed = *packed_options.packed;

    ForwardResult result;
    result.output = new_tensor(workspace, {B, T, E});
    if (options.path == AttentionPath::Standard) result.weights = new_tensor(workspace, {B, h, T, T});
    Verification d;
    d.cache_k = new_tensor(workspace, {B, G, T, d_k});
    d.cache_v = new_tensor(workspace, {B, G, T, d_k});
    if (P > 0) decode_prefix(w, in.x_q, masks, packed_options, P, tracer, d, result);  // 2, 9, 14
    const Tensor x_d = sequence_rows(in.x_q, P, K, workspace);  // (B, K, d_model)
    std::vector<std::size_t> positions(K);
    for (std::size_t i = 0; i < K; ++i) positions[i] = P + depths[i];
    project_draft(w, x_d, positions, s, packed_options, d);
    const DraftFacts facts = draft_facts(tree, s, w, options);
    show_draft_cache(d, w, s, facts, trace);  // 2

    d.concat = new_uninitialised(workspace, {B, K, s.inner()});
    for (std::size_t i = 0; i < K; ++i)
        attend_draft_token(d, tree, i, masks, s, options, result);  // 6-10
    cache_branch(d.k, first_rows(K), P, d.cache_k);  // the cache holds the draft in its order
    cache_branch(d.v, first_rows(K), P, d.cache_v);
    show_draft_attention(d, result, masks, s, options, facts, trace);  // 8, 9
    if (options.ablate_head) {
        Tensor context = d.concat.view({B, K, h, d_k}).transpose(1, 2);  // (B, h, K, d_k)
        zero_head(context, *options.ablate_head);
    }
    const Tensor concat = gate_concat(w, x_d, "x_d", d.concat, h, options, trace);  // 13 gated
    const Tensor out = project(concat, w.w_o, w.b_o, options.threads, workspace, &packed.o);
    put_rows(out, P, result.output);
    trace.show(out, [&] {  // 14
        Step step = described(StepKind::OutputProject, 14, "project", "out_d",
                              "out_d = concat @ W_o.T" + bias_suffix(!w.b_o.empty(), "b_o"),
                              {"B", "K", "d_model"}, macs_of({B, K, E, h * d_k}));
        step.facts.draft = facts;
        return step;
    });
    return result;
}

}  // namespace mha
