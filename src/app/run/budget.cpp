// The run's plan: its threads, the path of steps 6-10 (--attention auto picks one),
// what it would hold in memory, and the refusal before anything large is allocated.

#include "app/run/budget.h"

#include "app/run/kv_pool.h"
#include "core/checked.h"
#include "core/error.h"
#include "core/forms/mla_decode.h"
#include "core/pass/costs.h"
#include "core/pass/score_rules.h"
#include "core/reference.h"
#include "core/tensor/storage.h"
#include "core/threads/parallel.h"

#include <algorithm>
#include <optional>

namespace mha {

namespace {

// Waking a worker costs more than a small problem's whole forward pass on a busy
// machine, so by default each thread gets at least this many multiply-adds.
constexpr std::uint64_t macs_per_thread = std::uint64_t(1) << 23;

std::size_t default_threads(const Sizes& s) {
    return std::max<std::uint64_t>(
        1, std::min<std::uint64_t>(hardware_threads(), forward_macs(s) / macs_per_thread));
}

// --save holds what it writes three more times: as a C-order copy, as .npy bytes and inside
// the archive: output (B, N, d_model), the weights (B, h, N, M) unless streaming, and with
// --backward the gradients (`gradients` bytes).
std::uint64_t save_bytes(const Sizes& s, AttentionPath path, std::uint64_t gradients,
                         const std::string& what) {
    const std::uint64_t weights =
        path == AttentionPath::Standard
            ? checked_product({s.batch, s.heads, s.seq_len, s.kv_len}, what)
            : 0;
    return checked_product(
        {3, checked_sum({checked_product({sizeof(float), s.batch, s.seq_len, s.d_model}, what),
                         checked_product({sizeof(float), weights}, what), gradients},
                        what)},
        what);
}

// The output gate's rows (--gate): h·d_k element-wise, h head-wise; 0 without a gate.
std::size_t gate_rows(const Config& c, const Sizes& s) {
    return !c.gate ? 0 : *c.gate ? s.heads : s.inner();
}

// What the run holds besides the pass itself: the inputs, the weights (MLA's own when `mla`;
// with --block the feed-forward's too), the masks already loaded (mask_bytes), with
// --backward dO, and with --save what writing the file takes. The gradients are the pass's
// (pass_bytes).
std::uint64_t held_bytes(const Config& c, const Sizes& s, std::size_t d_ff,
                         std::uint64_t mask_bytes, AttentionPath path,
                         const std::optional<MlaSizes>& mla) {
    const std::string what = "the memory for this configuration";
    const std::uint64_t inputs = checked_product(
        {sizeof(float), checked_sum({checked_product({s.batch, s.seq_len, s.d_model}, what),
                                     checked_product({s.batch, s.kv_len, s.kdim + s.vdim}, what)},
                                    what)},
        what);
    // seeded weights share one block, which may be rounded up to 2 MiB huge pages
    // (MLA's five matrices and its norm are tensors of their own); the gate's (--gate) rows are
    // drawn as a set of their own, (rows, d_model) four times and four biases, and its block
    // stays while the gate holds part of it
    const std::uint64_t gate_weights =
        c.gate ? block_bytes(checked_sum(
                     {checked_product(
                          {gate_rows(c, s), checked_sum({4 * std::uint64_t(s.d_model), 3}, what)},
                          what),
                      s.d_model},
                     what))
               : 0;
    const std::uint64_t ffn_weights =
        c.block ? checked_product({2, s.d_model, d_ff, sizeof(float)}, what) : 0;
    const std::uint64_t weights =
        mla ? checked_product({sizeof(float), mla_parameter_count(*mla)}, what)
            : checked_sum(
                  {block_bytes(checked_product(
                       {s.d_model,
                        checked_sum({2 * std::uint64_t(s.d_model), s.kdim, s.vdim, 4}, what)},
                       what)),
                   gate_weights, ffn_weights},
                  what);
    const std::uint64_t grad_output =
        c.backward ? checked_product({sizeof(float), s.batch, s.seq_len, s.d_model}, what) : 0;
    const std::uint64_t gradients = c.backward ? checked_sum({inputs, weights}, what) : 0;
    const std::uint64_t saving = c.save_path.empty() ? 0 : save_bytes(s, path, gradients, what);
    return checked_sum({inputs, weights, mask_bytes, grad_output, saving}, what);
}

// What the views add after the pass, beside its result, each freed before the next: the
// heatmap, the SVG and the lesson page copy batch 0's maps, (N, M) floats each (the mean also sums
// in double into a growing list); --ablate-head runs the pass again and compares the two outputs as
// lists.
std::uint64_t view_bytes(const Config& c, const Sizes& s, const PassProblem& dry,
                         AttentionPath path, std::size_t threads,
                         const std::optional<MlaSizes>& mla) {
    const std::string what = "the memory for this configuration";
    std::uint64_t maps = 0, ablation = 0;
    if (c.heatmap || !c.svg_path.empty() || c.format == Format::Html) {
        const std::uint64_t heads =
            c.view_heads.empty() ? (c.mean_view ? 0 : s.heads) : c.view_heads.size();
        const std::uint64_t cells = checked_product({s.seq_len, s.kv_len}, what);
        maps = checked_sum({checked_product({heads, cells, sizeof(float)}, what),
                            c.mean_view ? checked_product({cells, 16}, what) : 0},
                           what);
    }
    if (c.ablate_head) {
        ablation =
            checked_sum({pass_bytes(c, s, dry, path, threads, mla),
                         checked_product({2 * sizeof(float), s.batch, s.seq_len, s.d_model}, what)},
                        what);
    }
    return std::max(maps, ablation);
}

const char* path_name(AttentionPath path) {
    return path == AttentionPath::Standard ? "standard" : "streaming";
}

// --attention, or auto. Every form can stream (every normaliser that `streams`). Auto takes the
// standard path for a normaliser the streaming path lacks, when decoding one token at a time
// (one query per unit would fill one of the fused tile's query lanes; measured slower; chunked
// prefill's chunks are many queries, and stream as the one-shot pass does),
// or when a view needs the weights, or when --save would write them or something shows them
// (the trace, JSON, Markdown) and they fit; else streaming, unless only the standard path
// fits (small sizes, where the streaming tiles are the larger allocation). `bytes` gives a
// path's total; it is asked only for what the choice reads (each costs a dry run).
template <typename Bytes>
AttentionPath choose_path(const Config& c, bool streams, Bytes bytes) {
    if (c.attention) return *c.attention;
    const bool one_query = (c.form == Form::Decode && c.prefill_chunks.empty()) || c.mla_decode;
    if (!streams || one_query) return AttentionPath::Standard;
    const bool needed = wants_summary(c) || !c.svg_path.empty() || c.format == Format::Html;
    if (needed) return AttentionPath::Standard;
    const bool shown = c.trace || c.format != Format::Text || !c.save_path.empty();
    const bool standard_fits = bytes(AttentionPath::Standard) <= c.max_memory;
    if (shown && standard_fits) return AttentionPath::Standard;
    return standard_fits && bytes(AttentionPath::Streaming) > c.max_memory
               ? AttentionPath::Standard
               : AttentionPath::Streaming;
}

// Refuses before allocating anything large.
void check_budget(const Sizes& s, std::uint64_t total, AttentionPath path,
                  std::uint64_t max_memory) {
    if (total > max_memory) {
        throw Error("this configuration needs " + byte_size(total) + " on the " + path_name(path) +
                    " path" + " (B=" + std::to_string(s.batch) + " N=" + std::to_string(s.seq_len) +
                    " M=" + std::to_string(s.kv_len) + " d_model=" + std::to_string(s.d_model) +
                    " h=" + std::to_string(s.heads) + "), more than --max-memory " +
                    byte_size(max_memory) +
                    "; raise --max-memory, shrink the sizes, or trace with --shapes-only");
    }
}

}  // namespace

std::uint64_t pass_bytes(const Config& c, const Sizes& s, const PassProblem& dry,
                         AttentionPath path, std::size_t threads,
                         const std::optional<MlaSizes>& mla) {
    if (c.gradcheck) return reference_bytes(s);
    PassProblem p = dry;
    p.options.path = path;
    const std::string what = "the memory for this configuration";
    std::uint64_t tensors = dry_peak_bytes(c, p);
    if (c.kv_quant) {  // a traced run decodes over the float cache first, to measure against
        Config plain = c;
        plain.kv_quant.reset();
        tensors = checked_sum({tensors, dry_peak_bytes(plain, p)}, what);
    }
    const bool cached = c.form == Form::Decode || c.mla_decode;
    const std::uint64_t outside =
        cached ? cached_form_outside_bytes(
                     c, s, mla ? latent_cache_sizes(*mla, s.batch, s.seq_len) : s, threads)
               : 0;
    // MLA runs its naive form and the absorbed one it is checked against
    const std::uint64_t scratch =
        mla ? std::max(
                  scratch_bytes(s, path, c.backward),
                  scratch_bytes(mla_absorbed_sizes(*mla, s.batch, s.seq_len), path, c.backward))
            : scratch_bytes(s, path, c.backward);
    return checked_sum({tensors, outside, checked_product({threads, scratch}, what)}, what);
}

RunPlan plan_run(const Config& c, const Sizes& s, std::size_t d_ff, const PassProblem& dry,
                 const std::optional<MlaSizes>& mla) {
    const Masks& masks = dry.masks;
    const std::uint64_t mask_bytes =
        sizeof(float) * (masks.attn_mask.numel() + masks.key_padding.numel());
    // what the run holds on each path (it differs by the weights --save writes), before the
    // threads, whose default reads the multiply-adds: a memory beyond 64 bits is named first
    const std::uint64_t held[] = {
        held_bytes(c, s, d_ff, mask_bytes, AttentionPath::Standard, mla),
        held_bytes(c, s, d_ff, mask_bytes, AttentionPath::Streaming, mla)};
    RunPlan plan;
    plan.threads = std::max<std::size_t>(  // B = 0 still runs on one thread
        1, std::min(c.threads ? c.threads : default_threads(s), s.batch * s.heads));
    // each path's total, worked out once (a dry run of the pass, decoding's every step)
    std::optional<std::uint64_t> totals[2];
    auto total = [&](AttentionPath path) {
        const std::size_t k = path == AttentionPath::Standard ? 0 : 1;
        std::optional<std::uint64_t>& known = totals[k];
        if (!known) {
            known = checked_sum({held[k], pass_bytes(c, s, dry, path, plan.threads, mla),
                                 view_bytes(c, s, dry, path, plan.threads, mla)},
                                "the memory for this configuration");
        }
        return *known;
    };
    if (c.gradcheck) {  // no float32 pass runs: the double-precision reference instead
        const std::uint64_t need = total(AttentionPath::Standard);
        if (need > c.max_memory) {
            throw Error("--gradcheck's double-precision reference needs " + byte_size(need) +
                        " (B=" + std::to_string(s.batch) + " N=" + std::to_string(s.seq_len) +
                        " M=" + std::to_string(s.kv_len) + "), more than --max-memory " +
                        byte_size(c.max_memory) + "; raise --max-memory or check smaller sizes");
        }
        return plan;
    }
    plan.path = choose_path(c, normaliser_of(masks).streams, total);
    plan.bytes = total(plan.path);
    check_budget(s, plan.bytes, plan.path, c.max_memory);
    return plan;
}

}  // namespace mha
