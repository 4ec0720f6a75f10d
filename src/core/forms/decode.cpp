// Decoding token by token with a KV cache.
//
//   x (B, T, d_model); cache_k, cache_v (B, G, T, d_k) filled one position per token
//   for t = 1 .. T (x_t = x[:, t-1], shape (B, 1, d_model)):
//     q_t = x_t W_q.T + b_q      (B, 1, h·d_k) -> (B, h, 1, d_k)
//     k_t, v_t likewise           (B, 1, G·d_k)  -> cache[:, :, t-1]
//     6-10 on the packed pass's units, one per (batch, head):
//     scores = q_t @ K[:, :, :t].T / sqrt(d_k)   (B, h, 1, t)   no causal mask needed: the
//                                                               future is not in the cache yet
//     out_t = softmax(scores) @ V[:, :, :t]      (B, h, 1, d_k) -> (B, 1, d_model) W_o.T + b_o
//     (--gate: the (B, 1, h·d_k) context times sigmoid(x_t W_g.T + b_g) first, step 13)

#include "core/forms/decode.h"

#include <optional>

#include "core/checked.h"
#include "core/forms/kv_cache.h"
#include "core/kv_heads.h"
#include "core/pass/describe.h"
#include "core/pass/projection.h"
#include "core/pass/score_rules.h"
#include "core/pass/shape_checks.h"

namespace mha {

namespace {

// What bounds token t's one query against the t + 1 cached positions: no causal rule (the
// future is not cached yet), but the window with its sinks, ALiBi and the soft-cap as in the
// full pass, the query at position t.
void token_attend_facts(const Masks& masks, const Sizes& s, std::size_t t, StepFacts& facts) {
    facts.token = token_facts(s, t);
    if (masks.window > 0) facts.token->window = window_facts(masks, s, t + 1);
    if (masks.softcap > 0) facts.softcap = masks.softcap;
    if (masks.alibi) {  // ALiBi alone: the window is the token's fact, and no causal rule applies
        Masks alibi;
        alibi.alibi = true;
        mask_facts(alibi, s, 1, t + 1, facts);
    }
}

// 6-10 for token t: one query row per (batch, head) unit against the t + 1 cached
// positions; no causal mask needed, the future is not in the cache yet (the window, its
// sinks, ALiBi and the soft-cap still apply). q (B, 1, h·d_k). Returns the heads' contexts
// side by side, (B, 1, h·d_k); keeps the weights in result.
Tensor attend_token(const Tensor& q, const KvCache& cache, const Masks& masks, std::size_t t,
                    const Sizes& s, const ForwardOptions& o, PassTrace& trace,
                    ForwardResult& result) {
    const std::size_t B = s.batch, W = s.inner(), h = s.heads, d_k = s.d_k(), length = t + 1;
    Sizes token_sizes = s;  // one query at position t against the `length` cached keys
    token_sizes.seq_len = 1;
    token_sizes.kv_len = length;
    const bool streamed = o.path == AttentionPath::Streaming;
    Tensor weights = streamed ? Tensor() : new_uninitialised(o.workspace, {B, h, 1, length});
    Tensor concat = new_uninitialised(o.workspace, {B, 1, W});
    Tensor context = concat.view({B, 1, h, d_k}).transpose(1, 2);  // (B, h, 1, d_k)
    const Units units{B * h, [&](std::size_t u) {
                          const std::size_t b = u / h, i = u % h;
                          const std::size_t g = kv_head_of(i, h, s.kv_heads);
                          return AttentionUnit{{q.data() + b * W + i * d_k, 1, d_k, d_k, 1},
                                               cache.keys(b, g, length),
                                               cache.values(b, g, length),
                                               unit_mask(masks, b, i, token_sizes),
                                               streamed ? nullptr : weights.data() + u * length,
                                               context.data() + b * W + i * d_k,
                                               d_k,
                                               b,
                                               i,
                                               t};
                      }};
    if (!any_dry(q, concat) && !cache.dry())
        run_units(streamed ? UnitStep::Streamed : UnitStep::Attend, units, unit_math(s, o),
                  o.threads);
    const Normaliser& normaliser = normaliser_of(masks);
    const std::string scores = "q_t @ K_cache.mT" + scale_suffix(o.scale, o.scale_base);
    trace.show(streamed ? context : weights, [&] {  // 9 the weights, or 10 the context streamed
        Step step = cached_attend_step(normaliser, scores, streamed, "N", "t", B, h, length, d_k);
        token_attend_facts(masks, s, t, step.facts);
        return step;
    });
    keep_weight_rows(weights, t, result.weights);
    if (o.ablate_head) zero_head(context, *o.ablate_head);
    return concat;
}

// 2: token t's key and value in the cache: K_cache[:, :, :t+1], a view of (B, G, T, d_k),
// shown by its layout alone: a view the pass reads, never a tensor of its own.
void show_cache(const KvCache& cache, const Weights& w, const ForwardOptions& o, const Masks& masks,
                const Sizes& s, std::size_t t, PassTrace& trace) {
    trace.show(cache.shown(t + 1), [&] {
        const std::size_t h = s.heads, G = s.kv_heads, d_k = s.d_k();
        Step step = described(StepKind::Cache, 2, "cache", cache.paged() ? "K_pool" : "K_cache",
                              cache.written(t, 1) + " = x_t @ W_k.T" +
                                  bias_suffix(!w.b_k.empty(), "b_k"),
                              cache.shown_dims(G == h ? "h" : "G"),
                              macs_of({s.batch, h * d_k + 2 * G * d_k, s.d_model}));
        TokenFacts& token = step.facts.token.emplace(token_facts(s, t));
        token.qk_norm = !w.q_norm.empty();
        token.rope = o.rope.has_value();
        if (masks.window > 0) token.window = window_facts(masks, s, t + 1);
        step.facts.paged = cache.facts(t, 1);
        return step;
    });
}

// The run over the float cache that a traced --kv-quant run measures its error against; none
// untraced or dry.
ForwardResult float_run(const Weights& w, const Inputs& in, const Masks& masks,
                        const ForwardOptions& options, const Tracer& tracer) {
    if (!tracer.enabled() || in.x_q.dry()) return {};
    NullTracer untraced;
    return decode(w, in, masks, options, untraced);
}

}  // namespace

ForwardResult decode(const Weights& w, const Inputs& in, const Masks& masks,
                     const ForwardOptions& options, Tracer& tracer, const KvPaging* paging,
                     const KvQuant& quant) {
    const Sizes s = check_pass(w, in, masks, options);
    check_form(Form::Decode, s, in.self_attention(), masks);
    const std::size_t B = s.batch, T = s.seq_len, E = s.d_model, h = s.heads, d_k = s.d_k();
    Workspace* const workspace = options.workspace;
    PassTrace trace(tracer);
    trace.show(in.x_q, [&] {
        return described(StepKind::Input, 0, "input", "x", "x", {"B", "T", "d_model"});  // 0
    });

    KvCache cache(s, paging, workspace);
    std::optional<KvQuantRun> quantised;  // --kv-quant: the codes, and the error from float
    std::optional<KvCache> dequantised;   // what attention then reads instead
    if (quant.on()) {
        quantised.emplace(quant, s, options, cache.contiguous_keys(), cache.contiguous_values(),
                          float_run(w, in, masks, options, tracer));
        dequantised.emplace(s, quantised->k(), quantised->v());
    }
    NullTracer untraced;  // QK-norm and RoPE of each new row are noted at step 2, not traced
    PassTrace silent(untraced);
    ForwardResult result;
    result.output = new_tensor(workspace, {B, T, E});
    if (options.path == AttentionPath::Standard) result.weights = new_tensor(workspace, {B, h, T, T});
    // every token projects its row with the same weights: packed once, not once a token
    const PackedWeights own = options.packed ? PackedWeights{} : pack_weights(w);
    const PackedWeights& packed = options.packed ? *options.packed : own;
    for (std::size_t t = 0; t < T; ++t) {
        const Tensor x_t = sequence_rows(in.x_q, t, 1, workspace);
        // (B, 1, h·d_k) and (B, 1, G·d_k)
        Tensor q = project(x_t, w.w_q, w.b_q, options.threads, workspace, &packed.q);
        Tensor k_t = project(x_t, w.w_k, w.b_k, options.threads, workspace, &packed.k);
        Tensor q_heads = q.view({B, 1, h, d_k}).transpose(1, 2);             // (B, h, 1, d_k)
        Tensor k_heads = k_t.view({B, 1, s.kv_heads, d_k}).transpose(1, 2);  // (B, G, 1, d_k)
        position_heads(w, q_heads, k_heads, t, t, options, silent, "");  // token t is at position t
        cache.write(k_t, project(x_t, w.w_v, w.b_v, options.threads, workspace, &packed.v), t);
        show_cache(cache, w, options, masks, s, t, trace);  // 2: the cache so far, a view
        if (quantised) {  // 2 quantised, and 6's error
            quantised->take(cache.contiguous_keys(), cache.contiguous_values(), t, trace);
            quantised->show_score_error(q, cache.contiguous_keys(), t, trace);
        }
        const KvCache& read = dequantised ? *dequantised : cache;
        const Tensor context = attend_token(q, read, masks, t, s, options, trace, result);  // 6-10
        if (quantised) quantised->show_weight_error(result.weights, t, trace);
        const Tensor concat = gate_concat(w, x_t, "x_t", context, h, options, trace);  // 13 gated
        const Tensor out =
            project(concat, w.w_o, w.b_o, options.threads, workspace, &packed.o);  // (B, 1, d_model)
        put_rows(out, t, result.output);
        trace.show(out, [&] {  // 14
            const bool streamed = options.path == AttentionPath::Streaming;
            const std::string width = q_width_name(s);
            Step step = described(
                StepKind::OutputProject, 14, "project", "out_t",
                (w.gated()  ? "out_t = concat @ W_o.T"  // the gated concat, 13
                 : streamed ? "out_t = context.transpose(1, 2).reshape(B, N, " + width + ") @ W_o.T"
                            : "out_t = (weights @ V_cache).view(B, N, " + width + ") @ W_o.T") +
                    bias_suffix(!w.b_o.empty(), "b_o"),
                {"B", "N", "d_model"},
                checked_sum({streamed ? 0 : macs_of({B, h, t + 1, d_k}), macs_of({B, E, h * d_k})},
                            "the multiply-adds"));
            step.facts.token = token_facts(s, t);
            return step;
        });
        if (quantised) quantised->show_output_error(out, t, trace);
    }
    if (quantised && !result.output.dry()) result.cache = quantised->arrays(cache.contiguous_keys(), cache.contiguous_values());
    return result;
}

}  // namespace mha
