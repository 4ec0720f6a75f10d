// Chunked prefill: the prompt in chunks against a growing KV cache.
//
//   x (B, N, d_model); cache_k, cache_v (B, G, N, d_k) filled a chunk at a time
//   for each chunk of c rows at positions [p, p + c) (x_c = x[:, p:p+c], (B, c, d_model)):
//     q_c = x_c W_q.T + b_q       (B, c, h·d_k) -> (B, h, c, d_k)   rotated to p .. p+c-1
//     k_c, v_c likewise            (B, c, G·d_k) -> cache[:, :, p:p+c]
//     6-14 of the packed pass with Q = q_c, K = cache_k[:, :, :p+c], V = cache_v[:, :, :p+c]:
//     scores (B, h, c, p+c), the causal mask aligned bottom-right (query i sees j <= p + i)

#include "core/forms/prefill.h"

#include "core/error.h"
#include "core/forms/kv_cache.h"
#include "core/pass/describe.h"
#include "core/pass/projection.h"
#include "core/pass/shape_checks.h"
#include "core/pass/trace.h"

namespace mha {

namespace {

void check_chunks(const std::vector<std::size_t>& chunks, std::size_t n) {
    std::uint64_t sum = 0;
    for (std::size_t c : chunks) {
        if (c == 0) throw Error("--prefill-chunks: a chunk of 0 tokens; every chunk needs one");
        sum += c;
    }
    if (sum != n) {
        throw Error("--prefill-chunks add up to " + std::to_string(sum) + " tokens, not N = " +
                    std::to_string(n) + "; the chunks split the sequence");
    }
}

// 2: the chunk's keys in the cache, K_cache[:, :, :p+c] (or the pool), shown by its layout
// alone.
void show_cache(const KvCache& cache, const Weights& w, const ForwardOptions& o, const Sizes& s,
                const ChunkFacts& chunk, PassTrace& trace) {
    const std::size_t held = chunk.first + chunk.size;
    trace.show(cache.shown(held), [&] {
        const std::size_t h = s.heads, G = s.kv_heads, d_k = s.d_k();
        Step step = described(StepKind::Cache, 2, "cache", cache.paged() ? "K_pool" : "K_cache",
                              cache.written(chunk.first, chunk.size) + " = x_c @ W_k.T" +
                                  bias_suffix(!w.b_k.empty(), "b_k"),
                              cache.shown_dims(G == h ? "h" : "G"),
                              macs_of({s.batch, chunk.size, h * d_k + 2 * G * d_k, s.d_model}));
        ChunkFacts& facts = step.facts.chunk.emplace(chunk);
        facts.qk_norm = !w.q_norm.empty();
        facts.rope = o.rope.has_value();
        step.facts.paged = cache.facts(chunk.first, chunk.size);
        return step;
    });
}

}  // namespace

ForwardResult prefill(const Weights& w, const Inputs& in, const Masks& masks,
                      const ForwardOptions& options, const std::vector<std::size_t>& chunks,
                      Tracer& tracer, const KvPaging* paging) {
    const Sizes s = check_pass(w, in, masks, options);
    check_form(Form::Decode, s, in.self_attention(), masks);  // causal self-attention alone
    check_chunks(chunks, s.seq_len);
    const std::size_t B = s.batch, N = s.seq_len, E = s.d_model, h = s.heads, G = s.kv_heads,
                      d_k = s.d_k();
    Workspace* const workspace = options.workspace;
    PassTrace trace(tracer);
    trace.show(in.x_q, [&] {
        return described(StepKind::Input, 0, "input", "x", "x", {"B", "N", "d_model"});  // 0
    });
    KvCache cache(s, paging, workspace);
    ForwardResult result;
    result.output = new_tensor(workspace, {B, N, E});
    if (options.path == AttentionPath::Standard) result.weights = new_tensor(workspace, {B, h, N, N});
    const PackedWeights own = options.packed ? PackedWeights{} : pack_weights(w);
    const PackedWeights& packed = options.packed ? *options.packed : own;
    // QK-norm and RoPE place each chunk's q and k once, before its keys are cached (noted at
    // step 2): the chunk's steps 6-14 get neither again
    NullTracer untraced;
    PassTrace silent(untraced);
    Weights placed = w;
    placed.q_norm = placed.k_norm = Tensor();
    ForwardOptions chunk_options = options;
    chunk_options.rope.reset();
    chunk_options.packed = &packed;
    Masks chunk_masks = masks;
    chunk_masks.causal = true;
    chunk_masks.causal_align = CausalAlign::BottomRight;
    std::size_t first = 0;
    for (std::size_t index = 0; index < chunks.size(); ++index) {
        const std::size_t c = chunks[index];
        const Tensor x_c = sequence_rows(in.x_q, first, c, workspace);  // (B, c, d_model)
        Tensor q = project(x_c, w.w_q, w.b_q, options.threads, workspace, &packed.q);
        Tensor k_c = project(x_c, w.w_k, w.b_k, options.threads, workspace, &packed.k);
        Tensor q_heads = q.view({B, c, h, d_k}).transpose(1, 2);  // (B, h, c, d_k)
        Tensor k_heads = k_c.view({B, c, G, d_k}).transpose(1, 2);  // (B, G, c, d_k)
        position_heads(w, q_heads, k_heads, first, first, options, silent, "");
        cache.write(k_c, project(x_c, w.w_v, w.b_v, options.threads, workspace, &packed.v), first);
        ChunkFacts facts;
        facts.index = index + 1;
        facts.count = chunks.size();
        facts.first = first;
        facts.size = c;
        facts.cache_bytes = macs_of({2, B, G, first + c, d_k, sizeof(float)});
        show_cache(cache, w, options, s, facts, trace);  // 2: the cache so far, a view

        Sizes chunk_sizes = s;  // c queries against the first + c cached positions
        chunk_sizes.seq_len = c;
        chunk_sizes.kv_len = first + c;
        const ForwardResult part = forward_from_heads(
            placed,
            {q_heads, cache.all_keys(first + c, workspace), cache.all_values(first + c, workspace)},
            chunk_masks, chunk_sizes, chunk_options, trace, x_c, "x_c");  // 6-14
        put_rows(part.output, first, result.output);
        keep_weight_rows(part.weights, first, result.weights);
        result.fully_masked_rows += part.fully_masked_rows;
        first += c;
    }
    return result;
}

}  // namespace mha
