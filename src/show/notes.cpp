// Step notes in words, fact by fact, in the order the trace prints them.

#include "show/notes.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>

#include "core/checked.h"
#include "core/pass/mla.h"
#include "show/format.h"
#include "show/kv_quant_notes.h"

namespace mha {

namespace {

using Notes = std::vector<std::string>;

// "query heads 0-1 read K/V head 0", one line per key/value head.
void kv_sharing(const std::vector<std::size_t>& kv_head_of_query, Notes& notes) {
    for (std::size_t first = 0; first < kv_head_of_query.size();) {
        std::size_t last = first;
        while (last + 1 < kv_head_of_query.size() &&
               kv_head_of_query[last + 1] == kv_head_of_query[first])
            ++last;
        notes.push_back(
            (first == last ? "query head " + std::to_string(first)
                           : "query heads " + std::to_string(first) + "-" + std::to_string(last)) +
            " read K/V head " + std::to_string(kv_head_of_query[first]));
        first = last + 1;
    }
}

// One line of the MHA / GQA / MQA comparison: weights and float32 cache with g K/V heads.
std::string kv_cost(const char* label, std::size_t g, const Sizes& s) {
    const std::uint64_t E = s.d_model, width = std::uint64_t(g) * s.d_k();  // G·d_k
    const std::uint64_t weights = 2 * E * s.inner() + width * (s.kdim + s.vdim);
    const std::uint64_t per_token = 2 * width * sizeof(float);  // one K row and one V row
    return std::string(label) + " G=" + std::to_string(g) + (g == s.kv_heads ? " (this run)" : "") +
           ": " + with_commas(weights) + " weights; cache " + byte_size(per_token) + "/token, " +
           byte_size(per_token * s.kv_len) + "/sequence of M=" + std::to_string(s.kv_len) +
           (g == s.heads ? ""
                         : "; " + std::to_string(s.heads / g) + "x smaller than MHA's (h/G = " +
                               std::to_string(s.heads) + "/" + std::to_string(g) + ")");
}

void kv_costs(const Sizes& s, Notes& notes) {
    notes.push_back(
        "projection weights (no biases) and K/V cache per layer and batch row, "
        "float32:");
    notes.push_back(kv_cost("MHA", s.heads, s));
    if (s.kv_heads != s.heads && s.kv_heads != 1) notes.push_back(kv_cost("GQA", s.kv_heads, s));
    if (s.heads != 1) notes.push_back(kv_cost("MQA", 1, s));
}

void scale(std::size_t d_k, const std::optional<double>& base, const std::optional<float>& factor,
           Notes& notes) {
    std::ostringstream note;
    if (factor && base) {
        note << "1/sqrt(S) = 1/sqrt(" << *base << ") = " << *factor
             << ": --scale-base S (Gemma 2's "
             << "query_pre_attn_scalar) replaces d_k = " << d_k;
    } else if (factor) {
        note << "1/sqrt(d_k) = 1/sqrt(" << d_k << ") = " << *factor;
    } else {
        note << "--no-scale: the scores are not divided by sqrt(d_k) = sqrt(" << d_k << ")";
    }
    notes.push_back(note.str());
}

std::string softcap(double cap) {
    const std::string c = compact(cap);
    return "soft-cap: scores = " + c + "·tanh(scores / " + c + "), so every score lies in (-" + c +
           ", " + c + "); small scores barely change";
}

// "m_0..m_3 = 0.25, 0.0625, ...": ALiBi's slope of every head, the first 8 and the last.
std::string alibi(const std::vector<double>& slopes) {
    const std::size_t heads = slopes.size();
    std::string text = "ALiBi: scores += -m_i·|p - j| (query at p = i + M - N); slopes m_0..m_" +
                       std::to_string(heads - 1) + " = ";
    for (std::size_t i = 0; i < heads; ++i) {
        if (i == 8 && heads > 9) {
            text += "..., ";
            i = heads - 1;
        }
        text += compact(slopes[i]) + (i + 1 < heads ? ", " : "");
    }
    return text;
}

// The sliding window, and the cache a decoder needs for it.
void window(const WindowFacts& w, Notes& notes) {
    const std::string W = std::to_string(w.window);
    notes.push_back("sliding window W = " + W + ": query p sees keys p-" + W + " < j <= p" +
                    (w.window >= w.length ? " (W >= M: the same as causal)" : ""));
    if (w.sinks > 0) {
        notes.push_back("attention sinks: keys 0.." + std::to_string(w.sinks - 1) +
                        " stay visible to every later query");
    }
    notes.push_back("a KV cache needs only " + std::to_string(w.kept) + " of the M = " +
                    std::to_string(w.length) + " positions: " + with_commas(w.kept_bytes) +
                    " bytes of K and V instead of " + with_commas(w.full_bytes));
}

// RoPE on Q: the pairs, the base, where the positions are and the first pairs' angles.
void rope(const RopeFacts& r, Notes& notes) {
    notes.push_back(std::string(r.half ? "RoPE, half layout: pairs (x[i], x[i + d_k/2])"
                                       : "RoPE, interleaved layout: pairs (x[2i], x[2i+1])") +
                    ", each turned by p·inv_freq[i], inv_freq[i] = " + compact(r.theta) + "^(-2i/" +
                    std::to_string(r.d_k) + ")" + (r.scaled ? ", then scaled" : ""));
    notes.push_back("queries at positions " + std::to_string(r.m - r.n) + ".." +
                    std::to_string(r.m - 1) + ", keys at 0.." + std::to_string(r.m - 1) +
                    "; angles of the first pairs:");
    for (const auto& [position, angles] : r.angles) {
        std::string text = "p = " + std::to_string(position) + ":";
        for (std::size_t i = 0; i < angles.size(); ++i) {
            text += (i ? ", " : " ") + compact(angles[i]);
        }
        notes.push_back(text + (angles.size() < r.pairs ? ", ... rad" : " rad"));
    }
}

// What the mask step applies (f.masks) to its N queries and M keys.
void masks(const StepFacts& f, Notes& notes) {
    const Masks& m = *f.masks;
    const std::size_t n = f.mask_queries, keys = f.mask_keys;
    const std::size_t first = notes.size();
    notes.insert(notes.end(), m.notes.begin(), m.notes.end());
    if (!f.alibi_slopes.empty()) notes.push_back(alibi(f.alibi_slopes));
    if (f.window) {
        window(*f.window, notes);
    } else if (m.causal && n == keys) {
        notes.push_back("causal: query i attends to keys 0..i");
    } else if (m.causal && m.causal_align == CausalAlign::TopLeft) {
        notes.push_back(
            "causal, top-left aligned: query i attends to keys 0..i (the queries are "
            "the first N of the M positions, as scaled_dot_product_attention's "
            "is_causal=True and torch.tril(ones(N, M)) align them)");
    } else if (m.causal) {
        notes.push_back("causal, bottom-right aligned: query i attends to keys 0..i+" +
                        std::to_string(keys) + "-" + std::to_string(n) +
                        " (the queries are the last N of the M positions, as with a KV cache)");
    }
    if (notes.size() == first) notes.push_back("no mask: every query attends to every key");
}

void appended(const AppendedFacts& a, Notes& notes) {
    notes.push_back("M " + std::to_string(a.from) + " -> " + std::to_string(a.to) + ": " +
                    (a.bias_kv ? "add_bias_kv appends bias_k and bias_v as one more key/value "
                                 "position; "
                               : "") +
                    (a.zero_attn ? "add_zero_attn appends a zero key and value; " : "") +
                    "every query sees them: attn_mask and key_padding_mask get columns of zeros "
                    "there, as PyTorch pads them");
}

void streaming(const Step& step, Notes& notes) {
    const StepFacts& f = step.facts;
    notes.push_back("streaming path: steps 6-9 run on tiles of " + std::to_string(f.query_tile) +
                    " queries x " + std::to_string(f.key_tile) +
                    " keys with an online softmax (a running max and sum per query), so the "
                    "(B, h, N, M) scores, " +
                    with_commas(*f.unstored_score_bytes) + " bytes, are never stored");
    notes.push_back("the context goes straight into (B, N, h, " + step.dims.back() +
                    ") order: step 12 has nothing to copy");
}

// The keys the window (and its sinks) leaves the query at position p of the cache.
void token_window(std::size_t p, const WindowFacts& w, Notes& notes) {
    const std::string W = "sliding window W = " + std::to_string(w.window);
    if (w.kept == w.length) {
        notes.push_back(
            W + (w.window >= w.length ? "" : " with " + std::to_string(w.sinks) + " sinks") +
            ": all " + std::to_string(w.length) + " cached positions are visible");
        return;
    }
    const std::size_t first = p + 1 - w.window;  // the oldest key inside the window
    std::string text = W + ": position " + std::to_string(p) + " reads keys " +
                       std::to_string(first) + ".." + std::to_string(p);
    if (w.sinks > 0) text += " and the sinks 0.." + std::to_string(std::min(w.sinks, first) - 1);
    notes.push_back(text + ", " + std::to_string(w.kept) + " of the " + std::to_string(w.length) +
                    " cached; the others are -inf before the softmax");
}

// "[0.1, -2, 3.5, 0.25, ...]": the first features of a row.
std::string first_features(const std::vector<float>& row) {
    constexpr std::size_t shown = 4;
    std::string text = "[";
    for (std::size_t j = 0; j < row.size() && j < shown; ++j)
        text += (j ? ", " : "") + compact(row[j]);
    return text + (row.size() > shown ? ", ...]" : "]");
}

// One tile of the flash row: what it saw, what the running max and sum became, the rescale.
std::string flash_tile(std::size_t index, const FlashTile& t) {
    std::string text = "tile " + std::to_string(index) + ", keys " + std::to_string(t.first_key) +
                       ".." + std::to_string(t.first_key + t.keys - 1) + ": ";
    if (std::isinf(t.tile_max) && t.tile_max < 0 && std::isinf(t.running_max)) {
        return text + "every key blocked so far; m, l and o stay empty";
    }
    text += "tile max " + compact(t.tile_max) + ", m = " + compact(t.running_max) + ", ";
    text += t.shrink == 0.0f   ? std::string("first visible keys: l and o start here")
            : t.shrink == 1.0f ? std::string("m unchanged: l and o kept as they were (rescale 1)")
                               : "l and o rescaled by e^(m_old - m) = " + compact(t.shrink);
    return text + ", l = " + compact(t.running_sum) + ", o = " + first_features(t.output);
}

// A flash row's tiles, one line each by `line`: the first six, how many are left out, the last.
template <typename Tile, typename Line>
void tile_lines(const std::vector<Tile>& tiles, Line line, Notes& notes) {
    constexpr std::size_t head_tiles = 6;  // tiles shown before the last one
    for (std::size_t i = 0; i < tiles.size(); ++i) {
        if (i == head_tiles && tiles.size() > head_tiles + 1) {
            notes.push_back("... " + std::to_string(tiles.size() - head_tiles - 1) + " more tiles");
            i = tiles.size() - 1;
        }
        notes.push_back(line(i, tiles[i]));
    }
}

// The first words of a flash row's notes: which row, which head, how wide the key tiles are.
std::string flash_row_head(std::size_t row, std::size_t head, std::size_t key_tile) {
    return "flash row: query " + std::to_string(row) + " of batch 0, head " + std::to_string(head) +
           ", keys in tiles of " + std::to_string(key_tile);
}

// A flash row's result beside the standard path's: "<what> = [...]; the standard <how> = [...]:
// max difference x".
std::string beside_standard(const std::string& what, const std::vector<float>& row,
                            const std::string& how, const std::vector<float>& standard,
                            double difference) {
    return what + " = " + first_features(row) + "; the standard " + how + " = " +
           first_features(standard) + ": max difference " + compact(difference);
}

// Streaming 10 with --flash-row: the online softmax of one row, tile by tile.
void flash(const FlashFacts& f, Notes& notes) {
    notes.push_back(flash_row_head(f.row, f.head, f.key_tile) +
                    "; per tile m = max(m, tile max), l = l·e^(m_old - m) + Σ e^(s - m), "
                    "o = o·e^(m_old - m) + Σ e^(s - m)·v");
    tile_lines(f.tiles, flash_tile, notes);
    notes.push_back(beside_standard("context = o / l", f.context,
                                    "path's row (all scores stored, softmax, weights @ V)",
                                    f.standard, f.max_difference));
}

// One tile of the backward's flash row: the weights recomputed, dS, dQ's row so far.
std::string flash_back_tile(std::size_t index, const FlashBackTile& t) {
    return "tile " + std::to_string(index) + ", keys " + std::to_string(t.first_key) + ".." +
           std::to_string(t.first_key + t.keys - 1) + ": Σ P = " + compact(t.weight_sum) +
           ", Σ dS = " + compact(t.ds_sum) + ", dq = " + first_features(t.dq);
}

// Streamed b10-b6 with --flash-row: one row of dQ built tile by tile from lse and D alone.
void flash_back(const FlashBackFacts& f, Notes& notes) {
    notes.push_back(flash_row_head(f.row, f.head, f.key_tile) +
                    "; the forward kept only lse = " + compact(f.lse) + " and O for this row");
    notes.push_back(
        "D = rowsum(dO_h * O_h) = " + compact(f.d) +
        "; from the whole row of P it would be rowsum(dP * P) = " + compact(f.d_standard));
    notes.push_back(
        "per tile: s recomputed, P = e^(s - lse), dP = dO_h V^T, dS = P (dP - D), "
        "dq += dS K");
    tile_lines(f.tiles, flash_back_tile, notes);
    notes.push_back(beside_standard("dq", f.dq, "backward's row (P stored whole)", f.standard,
                                    f.max_difference));
}

// MLA's cache ledger: numbers and float32 bytes one layer caches per token, and for N tokens.
void mla_ledger(const MlaFacts& m, Notes& notes) {
    const MlaSizes sizes{0, m.heads, m.d_nope, m.d_rope, m.d_latent, m.d_v};
    const CachePerToken cache = cache_per_token(sizes, m.gqa_kv_heads);
    notes.push_back("the KV cache keeps only c_kv (d_c = " + std::to_string(m.d_latent) +
                    ") and k_pe (d_R = " + std::to_string(m.d_rope) +
                    ") per token, shared by all h heads; keys and values are made from them");
    notes.push_back("KV cache per token and layer (float32), and for N = " +
                    std::to_string(m.length) + " tokens, with h = " + std::to_string(m.heads) +
                    ", d_h = " + std::to_string(m.d_nope) + ":");
    const auto line = [&](const std::string& form, const std::string& formula,
                          std::uint64_t numbers) {
        const std::uint64_t bytes = checked_product({numbers, sizeof(float)}, "the cache");
        notes.push_back(form + " " + formula + " = " + std::to_string(numbers) + " numbers, " +
                        byte_size(bytes) + "/token, " +
                        byte_size(checked_product({bytes, m.length}, "the cache")) + "/sequence");
    };
    line("MHA", "2·h·d_h", cache.mha);
    if (m.gqa_kv_heads > 0) line("GQA G=" + std::to_string(m.gqa_kv_heads), "2·G·d_h", cache.gqa);
    line("MQA", "2·d_h", cache.mqa);
    line("MLA (this run)", "d_c + d_R", cache.mla);
}

// The MLA form's steps: the cache, and what each form of the attention does (decoding's:
// latent_token).
void mla(const Step& step, const MlaFacts& m, Notes& notes) {
    const std::string difference =
        m.max_difference ? "; largest difference from the naive form: " + compact(*m.max_difference)
                         : "";
    if (m.latent_cache) return;
    if (m.ledger) {
        mla_ledger(m, notes);
    } else if (step.kind == StepKind::LatentUp) {
        notes.push_back(
            "naive: kv_b_proj up-projects the latent into every head's keys k_nope "
            "(B, h, N, d_h) and values v (B, h, N, d_v), as MHA would hold them; "
            "k_pe is one RoPE key for all heads; steps 6-14 then run as in every "
            "form, scaled by 1/sqrt(d_h + d_R)");
    } else if (step.kind == StepKind::AbsorbedWeights) {
        notes.push_back(
            "absorbed: q_nope · (W_UK c_j) = (W_UKᵀ q_nope) · c_j, so W_UK is folded "
            "into the query (B, h, N, d_c) and every head scores the cached latent "
            "itself: multi-query attention with keys [c_kv, k_pe], d_c + d_R wide" +
            difference);
    } else {
        notes.push_back(
            "absorbed: Σ_j p_j (W_UV c_j) = W_UV (Σ_j p_j c_j), so W_UV is folded "
            "into o_proj (d_model, h·d_c) and meets the weighted sum of latents "
            "(B, h, N, d_c) there; the same steps 6-14, with one key head" +
            difference);
    }
}

// A step of MLA decoding token t with the latent cache (--form mla --decode T).
void latent_token(const Step& step, const TokenFacts& t, const MlaFacts& m, Notes& notes) {
    const std::string token =
        "token " + std::to_string(t.position) + " of " + std::to_string(t.count);
    const std::string cached = std::to_string(t.position);
    if (step.kind == StepKind::Cache) {
        notes.push_back(token + ": projects only x_t (B, 1, d_model) into q_t and [c_kv_t, k_pe_t]; "
                        "the cache keeps c_kv_t (d_c = " + std::to_string(m.d_latent) +
                        ", after its RMSNorm) and k_pe_t (d_R = " + std::to_string(m.d_rope) +
                        "), nothing per head");
        const std::uint64_t per_token = (std::uint64_t(m.d_latent) + m.d_rope) * sizeof(float);
        const std::uint64_t mha = 2 * std::uint64_t(m.heads) * m.d_nope * sizeof(float);
        notes.push_back("the cache holds " + with_commas(t.cache_bytes) + " bytes: (d_c + d_R)·4 = " +
                        with_commas(per_token) + " bytes per token and sequence, shared by all " +
                        std::to_string(m.heads) + " heads, against 2·h·d_h·4 = " +
                        with_commas(mha) + " for MHA's K and V");
        if (!step.facts.paged) {
            notes.push_back(
                "the cache is allocated once for all T positions: the first t are a view "
                "into it, non-contiguous while t < T");
        }
        if (t.rope) {
            notes.push_back("q_pe and k_pe_t are rotated (RoPE) to position " +
                            std::to_string(t.position - 1) +
                            " before k_pe_t is cached: cached keys never need rotating again");
        }
    } else if (step.kind == StepKind::LatentUp) {
        notes.push_back("kv_b_proj up-projects all t = " + cached +
                        " cached latents into every head's k_nope (B, h, t, d_h) and v "
                        "(B, h, t, d_v), again for each token: the naive form, the same bits as "
                        "the one-shot pass (the absorbed form would score the latents "
                        "themselves); K = [k_nope, k_pe], k_pe one RoPE key for all heads");
    } else if (step.kind == StepKind::Softmax) {
        notes.push_back("one query (N = 1, at position " + std::to_string(t.position - 1) +
                        ") against the t = " + cached +
                        " cached positions; no causal mask needed: later tokens are not cached "
                        "yet");
    } else {
        notes.push_back(token + " done; the cache holds " + with_commas(t.cache_bytes) +
                        " bytes of c_kv and k_pe");
    }
}

void token(const Step& step, const TokenFacts& t, Notes& notes) {
    if (step.facts.mla && step.facts.mla->latent_cache) {
        latent_token(step, t, *step.facts.mla, notes);
        return;
    }
    const std::string token =
        "token " + std::to_string(t.position) + " of " + std::to_string(t.count);
    if (step.kind == StepKind::Cache) {
        notes.push_back(token +
                        ": projects only x_t (B, 1, d_model) into q_t, k_t and v_t; K "
                        "and V of earlier tokens come from the cache (V_cache likewise)");
        if (!step.facts.paged) {
            notes.push_back(
                "the cache is allocated once for all T positions: the first t are a view "
                "into it, non-contiguous while t < T");
        }
        if (t.qk_norm) notes.push_back("q_t and k_t are RMS-normalised (QK-norm) before caching");
        if (t.rope) {
            notes.push_back("q_t and k_t are rotated (RoPE) to position " +
                            std::to_string(t.position - 1) +
                            " before k_t is cached: cached keys never need rotating again");
        }
        if (t.window) {
            notes.push_back("sliding window: only " + std::to_string(t.window->kept) + " of the " +
                            std::to_string(t.window->length) +
                            " cached positions are still read; a rolling cache would hold " +
                            with_commas(t.window->kept_bytes) + " bytes");
        }
    } else if (step.kind == StepKind::Softmax || step.kind == StepKind::Attend) {
        notes.push_back("one query (N = 1, at position " + std::to_string(t.position - 1) +
                        ") against the t = " + std::to_string(t.position) +
                        " cached positions; no causal mask needed: later tokens are not cached "
                        "yet");
        if (t.window) token_window(t.position - 1, *t.window, notes);
    } else {
        notes.push_back(token + " done; the cache holds " + with_commas(t.cache_bytes) +
                        " bytes of K and V");
    }
}

void chunk(const ChunkFacts& c, Notes& notes) {
    const std::size_t last = c.first + c.size - 1;
    notes.push_back("chunk " + std::to_string(c.index) + " of " + std::to_string(c.count) +
                    ": projects only its rows (positions " + std::to_string(c.first) + " to " +
                    std::to_string(last) + ") into q, k and v; K and V of the " +
                    std::to_string(c.first) +
                    " positions before come from the cache, which now holds " +
                    std::to_string(c.cache_bytes) + " bytes of K and V");
    notes.push_back("its queries see the whole cached prefix and, causally, their own chunk: "
                    "the causal mask aligned bottom-right, query i at position " +
                    std::to_string(c.first) + " + i seeing keys j <= " + std::to_string(c.first) +
                    " + i (step 8 draws the prefix block and the chunk's triangle)");
    if (c.qk_norm) notes.push_back("q and k are RMS-normalised (QK-norm) before caching");
    if (c.rope) {
        notes.push_back("q and k are rotated (RoPE) to positions " + std::to_string(c.first) +
                        " to " + std::to_string(last) +
                        " before k is cached: cached keys never need rotating again");
    }
}

// "list[2] = 7": one entry of a list of numbers.
std::string entry(const std::string& list, std::size_t index, std::size_t value) {
    return list + "[" + std::to_string(index) + "] = " + std::to_string(value);
}

void paged(const PagedFacts& p, Notes& notes) {
    const std::string S = std::to_string(p.block_size);
    notes.push_back("paged: the cache is a pool of " + std::to_string(p.pool_blocks) +
                    (p.pool_blocks == 1 ? " block" : " blocks") + " of S = " + S + " positions (" + with_commas(p.block_bytes) +
                    (p.latent ? " bytes of c_kv and k_pe each), " : " bytes of K and V each), ") +
                    (p.in_order ? "in order" : "shuffled by --kv-pool-seed") +
                    ", and a block table for each of the B = " + std::to_string(p.sequences) +
                    " sequences");
    for (const PagedPosition& at : p.positions) {
        const std::string t = std::to_string(at.position);
        notes.push_back("position t = " + t + " of sequence 0: block_table[t // S] = " +
                        "block_table[" + t + " // " + S + "] = " +
                        entry("block_table", at.entry, at.block) + ", slot t % S = " + t + " % " +
                        S + " = " + std::to_string(at.slot));
    }
    notes.push_back("block_table[0] = [" + joined(p.tables.front(), ", ") + "]" +
                    ": the pass reads each unit's keys and values block by block through it");
    notes.push_back("internal fragmentation: the last blocks hold " +
                    with_commas(p.unused_bytes) +
                    " bytes allocated but not yet written (every sequence's)");
}

// What the feed-forward's activation step computes.
std::string activation_words(const StepFacts& f) {
    const std::string gate = f.gated ? ", times the up projection (a gated feed-forward)" : "";
    if (f.activation == "F.silu") return "SiLU(u) = u · sigmoid(u)" + gate;
    if (f.activation == "gelu_tanh") {
        return "GELU's tanh form: u/2 · (1 + tanh(sqrt(2/π) · (u + 0.044715 u³)))" + gate;
    }
    return "GELU(u) = u/2 · (1 + erf(u/√2)), the exact form (not tanh)" + gate;
}

// "-1 → 0 → 2": the draft tokens from the last cached one down to `leaf`.
std::string draft_branch(const DraftFacts& d, std::size_t leaf) {
    std::string path = std::to_string(leaf);
    for (std::ptrdiff_t node = d.parents[leaf]; node >= 0; node = d.parents[std::size_t(node)])
        path = std::to_string(node) + " → " + path;
    return "-1 → " + path;
}

void draft(const Step& step, const DraftFacts& d, Notes& notes) {
    const std::size_t K = d.parents.size(), T = d.prefix + K;
    if (step.kind == StepKind::Cache) {
        notes.push_back("a draft of " + std::to_string(K) + " tokens after the " +
                        std::to_string(d.prefix) + " cached, verified in one pass: x_d = x[:, " +
                        std::to_string(d.prefix) + ":" + std::to_string(T) +
                        "] projected at once into q, k and v, its K and V written after the "
                        "prefix's; the cache now holds " +
                        with_commas(d.cache_bytes) + " bytes of K and V");
        notes.push_back("the draft tree: token i hangs from its parent (-1: the last cached "
                        "token) at position " + std::to_string(d.prefix) + " + its depth");
        std::vector<bool> leaf(K, true);
        for (std::ptrdiff_t parent : d.parents) {
            if (parent >= 0) leaf[std::size_t(parent)] = false;
        }
        for (std::size_t i = 0; i < K; ++i) {
            notes.push_back("draft " + std::to_string(i) + ": parent " +
                            std::to_string(d.parents[i]) + ", depth " +
                            std::to_string(d.depths[i]) + ", position " +
                            std::to_string(d.prefix + d.depths[i]) +
                            (leaf[i] ? "; branch " + draft_branch(d, i) : ""));
        }
        if (d.qk_norm) notes.push_back("q and k are RMS-normalised (QK-norm) before caching");
        if (d.rope) {
            notes.push_back("q and k are rotated (RoPE) to each token's position before k is "
                            "cached: tokens at the same depth share a position");
        }
    } else if (step.kind == StepKind::Mask) {
        notes.push_back("draft token i sees the " + std::to_string(d.prefix) +
                        " cached positions, its ancestors and itself: the tree mask (a chain's "
                        "is the causal mask over the draft)");
        notes.push_back("each draft query attends over just those keys, in position order: "
                        "the keys decoding its branch token by token would have cached, so its "
                        "row equals that decoding to the bit");
    } else {
        notes.push_back("the draft's " + std::to_string(K) +
                        " rows done in one pass; each equals decoding its branch token by "
                        "token");
    }
}

// What a step's kind says by itself: the fused projection, the per-head concat, the block.
void by_kind(const Step& step, Notes& notes) {
    const std::string parameters =
        step.facts.parameters ? with_commas(*step.facts.parameters) : "";
    switch (step.kind) {
        case StepKind::Project:
            if (step.operand == Operand::Qkv) {
                notes.push_back(
                    "W_qkv (3·d_model, d_model) is W_q, W_k and W_v stacked: one "
                    "matrix product instead of three");
            }
            break;
        case StepKind::OutputProject:
            if (step.facts.token || step.facts.mla) break;  // decode's and MLA's have their own
            notes.push_back(
                std::string("W_o mixes the heads: head i fills concat's columns ") +
                (step.facts.value_heads ? "i·d_v to (i+1)·d_v - 1" : "i·d_k to (i+1)·d_k - 1") +
                ", and every output feature sums over all heads "
                "(--head-contributions shows each head's share)");
            break;
        case StepKind::Gate:
            if (step.tensor == "gate" && !step.backward) {
                notes.push_back(
                    "sigmoid keeps every gate in (0, 1): it can only scale a head's output "
                    "down, and it depends on the token, unlike W_o");
            }
            break;
        case StepKind::Concat:
            notes.push_back(
                "the packed form gets this by transpose, contiguous and view; here "
                "every head's (B, N, d_k) block is copied into place");
            break;
        case StepKind::QkNorm:
            if (step.operand == Operand::Q) {
                notes.push_back(
                    "RMSNorm over each head's d_k features: Q / sqrt(mean(Q²) + "
                    "1e-06) · q_norm.weight (d_k)");
            }
            break;
        case StepKind::Rope:
            if (step.operand == Operand::K) {
                notes.push_back("q_p · k_j now depends on p - j only; V is not rotated");
            }
            break;
        case StepKind::Norm:
            if (step.facts.rms_eps) {
                notes.push_back("each row: v / sqrt(mean(v²) + " + compact(*step.facts.rms_eps) +
                                ") * weight, over d_model features (RMSNorm)");
                notes.push_back("parameters: weight, d_model = " + parameters);
                break;
            }
            notes.push_back(
                "each row: (v - mean) / sqrt(var + 1e-5) * gamma + beta, over "
                "d_model features (nn.LayerNorm)");
            notes.push_back("parameters: gamma and beta, 2·d_model = " + parameters);
            break;
        case StepKind::FfnIn:
            notes.push_back((step.facts.gated ? "parameters: W_gate (d_ff, d_model), " :
                                                "parameters: W_1 (d_ff, d_model) and b_1, ") +
                            parameters);
            break;
        case StepKind::Gelu:
            notes.push_back(activation_words(step.facts));
            break;
        case StepKind::FfnOut:
            notes.push_back("parameters: W_2 (d_model, d_ff) and b_2, " + parameters);
            break;
        default:
            break;
    }
}

// The backward's facts: the D trick measured, the GQA sum, the blocked zeros, the scale's factor.
std::vector<std::string> backward_notes(const Step& step) {
    const StepFacts& f = step.facts;
    Notes notes;
    if (f.row_dot_difference) {
        notes.push_back(
            "D = rowsum(dP * P), as PyTorch forms it, equals rowsum(dO_h * O_h), since "
            "O_h = P V; measured here: max |rowsum(dO_h * O_h) - D| = " +
            compact(*f.row_dot_difference));
    }
    if (f.summed_heads > 0) {
        const std::string r = std::to_string(f.summed_heads);
        notes.push_back("K/V head g was read by query heads g·" + r + " to g·" + r + " + " +
                        std::to_string(f.summed_heads - 1) +
                        ": their gradients are added in head order (the adjoint of "
                        "repeat_interleave)");
    }
    if (f.blocked_zero_gradient) {
        notes.push_back("a blocked key has P = 0, so dS = 0 there: no gradient reaches it");
    }
    if (step.kind == StepKind::AttendGrad && step.operand == Operand::Q) {
        notes.push_back(
            "streaming: P is never stored; each tile recomputes it from the row "
            "log-sum-exp (B, h, N) the forward kept, as FlashAttention-2 does");
    }
    if (f.flash_back) flash_back(*f.flash_back, notes);
    if (step.kind == StepKind::MaskGrad) {
        notes.push_back("the mask (and ALiBi's bias) has no parameter: nothing to learn there");
    }
    if (f.scale_factor) notes.push_back("times the forward's factor " + compact(*f.scale_factor));
    if (f.softcap) {
        notes.push_back("times 1 - tanh²(s / " + compact(*f.softcap) +
                        "), the tanh read from the capped scores");
    }
    if (f.appended) {
        if (f.appended->bias_kv) {
            notes.push_back("row " + std::to_string(f.appended->from) +
                            " was bias_k/bias_v: its gradient, summed over the batch, is "
                            "theirs");
        }
        if (f.appended->zero_attn) {
            notes.push_back(
                "the zero row of add_zero_attn has no parameter: its gradient is "
                "dropped");
        }
    }
    return notes;
}

}  // namespace

std::vector<std::string> step_notes(const Step& step) {
    if (step.backward) return backward_notes(step);
    const StepFacts& f = step.facts;
    Notes notes;
    kv_sharing(f.kv_head_of_query, notes);
    if (f.kv_costs) kv_costs(*f.kv_costs, notes);
    if (f.reads_kv_head) {
        notes.push_back("query head " + std::to_string(f.reads_kv_head->first) +
                        " reads K/V head " + std::to_string(f.reads_kv_head->second));
    }
    if (f.kv_group > 0) {
        const std::string group = std::to_string(f.kv_group);
        notes.push_back("query head i reads K/V head i / " + group + ": what K.repeat_interleave(" +
                        group + ", dim=1) computes, without copying K or V");
    }
    if (f.stored_score_bytes) {
        notes.push_back("standard path: the scores are stored, " +
                        with_commas(*f.stored_score_bytes) +
                        " bytes (--attention streaming would not store them)");
    }
    if (f.rope) rope(*f.rope, notes);
    if (f.scale_d_k) scale(*f.scale_d_k, f.scale_base, f.scale_factor, notes);
    if (f.softcap) notes.push_back(softcap(*f.softcap));
    if (f.appended) appended(*f.appended, notes);
    if (f.masks) masks(f, notes);
    if (f.unstored_score_bytes) streaming(step, notes);
    if (f.flash) flash(*f.flash, notes);
    if (f.mla) mla(step, *f.mla, notes);
    if (f.token) token(step, *f.token, notes);
    if (f.chunk) chunk(*f.chunk, notes);
    if (f.draft) draft(step, *f.draft, notes);
    if (f.paged) paged(*f.paged, notes);
    kv_quant_notes(step, notes);
    by_kind(step, notes);
    for (const std::string& source : f.sources) notes.push_back("from the checkpoint: " + source);
    return notes;
}

}  // namespace mha
