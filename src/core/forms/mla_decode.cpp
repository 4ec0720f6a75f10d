// MLA decoding with a latent KV cache.
//
//   x (B, T, d_model); C_cache (B, 1, T, d_c) and R_cache (B, 1, T, d_R) filled one position
//   per token (core/forms/paged_kv.h's KvCache: c_kv as its keys, k_pe as its values)
//   for t = 0 .. T-1 (x_t = x[:, t], shape (B, 1, d_model)):
//     1-2  q_t, [c_kv_t, k_pe_t] from x_t; c_kv_t RMSNormed; q_pe, k_pe_t rotated to position t
//          C_cache[:, :, t] = c_kv_t, R_cache[:, :, t] = k_pe_t
//     3    kv = C_cache[:, :, :t+1] kv_b_projᵀ   (B, t+1, h·(d_h + d_v)): k_nope and V of every
//          head up-projected from the cached latents (the naive form: the same bits as the
//          one-shot pass; the absorbed form would score the latents themselves)
//     5    Q_t = [q_nope, q_pe] (B, h, 1, d_h + d_R), K = [k_nope, k_pe] (B, h, t+1, d_h + d_R),
//          V (B, h, t+1, d_v)
//     6-14 the shared steps on one query against t+1 keys: no causal mask needed, the future is
//          not in the cache yet (the window and soft-cap still apply); out_t (B, 1, d_model)

#include "core/forms/mla_decode.h"

#include <algorithm>
#include <string>

#include "core/checked.h"
#include "core/error.h"
#include "core/forms/kv_cache.h"
#include "core/forms/mla_pass.h"
#include "core/forms/mla_parts.h"
#include "core/pass/describe.h"
#include "core/pass/projection.h"
#include "core/pass/score_rules.h"
#include "core/pass/shape_checks.h"

namespace mha {

namespace {

// Positions [0, length) of the cached latents (the cache's keys) or RoPE keys (its values),
// (B, length, width), copied out of the cache block by block when it is paged.
Tensor cached_rows(const KvCache& cache, bool latents, std::size_t batch, std::size_t length,
                   std::size_t width, Workspace* workspace) {
    if (cache.dry()) return new_dry(workspace, {batch, length, width});
    Tensor rows = new_uninitialised(workspace, {batch, length, width});
    for (std::size_t b = 0; b < batch; ++b) {
        const MatrixView from = latents ? cache.keys(b, 0, length) : cache.values(b, 0, length);
        std::copy(from.data, from.data + length * width, rows.data() + b * length * width);
    }
    return rows;
}

// Token t's facts: which token, and the latent cache's bytes once it is in.
TokenFacts latent_token_facts(const MlaSizes& m, std::size_t batch, std::size_t T, std::size_t t,
                              bool rope) {
    TokenFacts facts;
    facts.position = t + 1;
    facts.count = T;
    facts.cache_bytes = macs_of({batch, t + 1, m.d_latent + m.d_rope, sizeof(float)});
    facts.rope = rope;
    return facts;
}

// The facts of a step of decoding token t with the latent cache.
StepFacts latent_facts(const MlaSizes& m, std::size_t batch, std::size_t T, std::size_t t,
                       bool rope) {
    StepFacts facts;
    facts.mla = mla_facts(m, T, false);
    facts.mla->latent_cache = true;
    facts.token = latent_token_facts(m, batch, T, t, rope);
    return facts;
}

// 2: token t's c_kv and k_pe in the latent cache, shown by its layout alone: the first t + 1
// positions of the latents (B, 1, t, d_c), or the pool of latent blocks (blocks, 1, S, d_c).
void show_cache(const KvCache& cache, const MlaSizes& m, std::size_t batch, std::size_t T,
                std::size_t t, const ForwardOptions& o, PassTrace& trace) {
    trace.show(cache.shown(t + 1), [&] {
        const std::uint64_t macs = macs_of(
            {batch, m.heads * (m.d_nope + m.d_rope) + m.d_latent + m.d_rope, m.d_model});
        const Dims dims = cache.paged() ? Dims{"blocks", "1", "S", "d_c"}
                                        : Dims{"B", "1", "t", "d_c"};
        Step step = described(StepKind::Cache, 2, "cache", cache.paged() ? "C_pool" : "C_cache",
                              cache.written(t, 1, "C") + ", " + cache.written(t, 1, "R") +
                                  " = kv_a_layernorm(c_kv_t), rope(k_pe_t)  where c_kv_t, "
                                  "k_pe_t = (x_t @ kv_a_proj_with_mqa.T).split([d_c, d_R], -1)",
                              dims, macs);
        step.facts = latent_facts(m, batch, T, t, o.rope.has_value());
        step.facts.paged = cache.facts(t, 1);
        if (step.facts.paged) step.facts.paged->latent = true;
        return step;
    });
}

// "C_cache[:, 0, :3]", or paged "C_pool[block_table[:, j // 2], 0, j % 2] for j < 3": the
// first `length` cached latents as step 3 reads them.
std::string cached_latents(const KvCache& cache, std::size_t length) {
    const std::string n = std::to_string(length);
    if (!cache.paged()) return "C_cache[:, 0, :" + n + "]";
    const std::string S = std::to_string(cache.block_size());
    return "(C_pool[block_table[:, j // " + S + "], 0, j % " + S + "] for j < " + n + ")";
}

// 3: k_nope and V of every head up-projected from the t + 1 cached latents.
void show_up_projection(const Tensor& kv, const KvCache& cache, const MlaSizes& m, std::size_t T,
                        std::size_t t, bool rope, PassTrace& trace) {
    trace.show(kv, [&] {
        const std::size_t B = kv.size(0), length = t + 1;
        Step step = described(StepKind::LatentUp, 3, "project", "kv",
                              "k_nope, V = (" + cached_latents(cache, length) +
                                  " @ kv_b_proj.T).view(B, t, h, d_h+d_v).split([d_h, d_v], -1)",
                              {"B", "t", "h·(d_h+d_v)"},
                              macs_of({B, length, m.heads * (m.d_nope + m.d_v), m.d_latent}));
        step.facts = latent_facts(m, B, T, t, rope);
        return step;
    });
}

// 9: token t's weights (B, h, 1, t + 1), its one query against the t + 1 cached positions.
void show_weights(const Tensor& weights, const Masks& masks, const MlaSizes& m, std::size_t T,
                  std::size_t t, const ForwardOptions& o, PassTrace& trace) {
    trace.show(weights, [&] {
        const std::size_t B = weights.size(0);
        const std::string scores = "cat([q_nope, q_pe]) @ cat([k_nope, k_pe]).mT" +
                                   scale_suffix(o.scale, o.scale_base);
        Step step = cached_attend_step(normaliser_of(masks), scores, false, "N", "t", B, m.heads,
                                       t + 1, m.d_nope + m.d_rope);
        const Normaliser* normaliser = step.facts.normaliser;
        step.facts = latent_facts(m, B, T, t, o.rope.has_value());
        step.facts.normaliser = normaliser;
        if (masks.softcap > 0) step.facts.softcap = masks.softcap;
        return step;
    });
}

// 14: token t's output row out_t (B, 1, d_model), with the weighted sum of step 10 before it.
void show_output(const Tensor& out, const MlaSizes& m, std::size_t T, std::size_t t,
                 const ForwardOptions& o, PassTrace& trace) {
    trace.show(out, [&] {
        const std::size_t B = out.size(0), h = m.heads, length = t + 1;
        const bool streamed = o.path == AttentionPath::Streaming;
        const std::uint64_t scores = streamed ? macs_of({B, h, length, m.d_nope + m.d_rope}) : 0;
        Step step = described(
            StepKind::OutputProject, 14, "project", "out_t",
            std::string(streamed ? "out_t = context" : "out_t = (weights @ V)") +
                ".transpose(1, 2).reshape(B, N, h·d_v) @ o_proj.T",
            {"B", "N", "d_model"},
            checked_sum({scores, macs_of({B, h, length, m.d_v}), macs_of({B, m.d_model, h * m.d_v})},
                        "the multiply-adds"));
        step.facts = latent_facts(m, B, T, t, o.rope.has_value());
        return step;
    });
}

}  // namespace

Sizes latent_cache_sizes(const MlaSizes& m, std::size_t batch, std::size_t seq_len) {
    Sizes s{batch, seq_len, seq_len, m.d_model, m.d_model, m.d_model, 1, 1, m.d_latent};
    s.value_dim = m.d_rope;
    return s;
}

ForwardResult decode_mla(const MlaWeights& w, const Tensor& x, const Masks& masks,
                         const ForwardOptions& options, Tracer& tracer, const KvPaging* paging) {
    const MlaSizes m = check_mla(w, x, masks, options);
    const std::size_t B = x.size(0), T = x.size(1), h = m.heads;
    check_form(Form::Decode, mla_naive_sizes(m, B, T), true, masks);
    Workspace* const workspace = options.workspace;
    PassTrace trace(tracer);
    show_inputs(Inputs{x, x, x}, trace);  // 0

    KvCache cache(latent_cache_sizes(m, B, T), paging, workspace);
    ForwardResult result;
    result.output = new_tensor(workspace, {B, T, m.d_model});
    if (options.path == AttentionPath::Standard) result.weights = new_tensor(workspace, {B, h, T, T});
    NullTracer untraced;  // steps 6-14 of each token run silently: 9 and 14 are shown below
    PassTrace silent(untraced);
    const ForwardOptions shared = shared_options(options);
    Masks token_masks = masks;  // one query at position t against t + 1 keys: bottom-right
    token_masks.causal = true;
    token_masks.causal_align = CausalAlign::BottomRight;
    Weights out_proj;
    out_proj.w_o = w.w_o;
    for (std::size_t t = 0; t < T; ++t) {
        const MlaParts parts = project_parts(w, sequence_rows(x, t, 1, workspace), m, options, t);
        cache.write(parts.latent, parts.rope_key, t);
        show_cache(cache, m, B, T, t, options, trace);  // 2: the latent cache so far, a view
        const std::size_t length = t + 1;
        const Tensor kv = project(cached_rows(cache, true, B, length, m.d_latent, workspace),
                                  w.w_kv_b, Tensor(), options.threads, workspace);  // 3
        check_finite(kv, "kv_b_proj");
        show_up_projection(kv, cache, m, T, t, options.rope.has_value(), trace);
        KeyValueHeads kv_heads = key_value_heads(
            kv, cached_rows(cache, false, B, length, m.d_rope, workspace), m, workspace);
        Sizes token_sizes = mla_naive_sizes(m, B, 1);  // one query against t + 1 keys
        token_sizes.kv_len = length;
        const ForwardResult token = forward_from_heads(
            out_proj,
            {query_heads(parts, m, workspace), std::move(kv_heads.k), std::move(kv_heads.v)},
            token_masks, token_sizes, shared, silent);  // 5, 6-14
        if (!token.weights.empty()) show_weights(token.weights, masks, m, T, t, options, trace);
        keep_weight_rows(token.weights, t, result.weights);
        result.fully_masked_rows += token.fully_masked_rows;
        put_rows(token.output, t, result.output);
        show_output(token.output, m, T, t, options, trace);  // 14
    }
    return result;
}

}  // namespace mha
