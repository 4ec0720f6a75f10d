// Serving questions from traced decode-lab runs: draw a layer and a mechanism, run it with a
// recorder, read the answer off the facts of the recorded steps.

#include "app/classroom/serving_questions.h"

#include <algorithm>
#include <string>
#include <vector>

#include "app/cli/cli.h"
#include "app/run/traced_run.h"
#include "core/error.h"
#include "show/format.h"

namespace mha {

namespace {

using Random = std::mt19937_64;

// The sizes of the layer a question decodes with.
struct Layer {
    std::size_t batch = 1, heads = 2, kv_heads = 2, d_k = 4;
};

Layer draw_layer(Random& random) {
    const std::size_t widths[] = {4, 8, 16};
    Layer l;
    l.batch = draw(random, 1, 3);
    l.heads = draw(random, 0, 1) == 0 ? 2 : 4;
    const std::size_t shares[] = {1, l.heads / 2, l.heads};  // MQA, GQA, MHA
    l.kv_heads = shares[draw(random, 0, 2)];
    l.d_k = widths[draw(random, 0, 2)];
    return l;
}

// "B=2, d_model=32, h=4, G=2 K/V heads, d_k=8"
std::string described(const Layer& l) {
    return "B=" + std::to_string(l.batch) + ", d_model=" + std::to_string(l.heads * l.d_k) +
           ", h=" + std::to_string(l.heads) + ", G=" + std::to_string(l.kv_heads) +
           " K/V heads, d_k=" + std::to_string(l.d_k) + "; causal self-attention with bias";
}

// The layer's run with these options, one thread, traced.
Trace traced_with(const Layer& l, const std::vector<std::string>& options) {
    std::vector<std::string> words = {"-b", std::to_string(l.batch), "-H", std::to_string(l.heads),
                                      "-G", std::to_string(l.kv_heads), "-d",
                                      std::to_string(l.heads * l.d_k), "-t", "1", "--trace"};
    words.insert(words.end(), options.begin(), options.end());
    return traced(parse_args(words));
}

// Decode's paged step 2 that writes position t (0-based) of every sequence.
const Recorded& paged_write(const Trace& trace, std::size_t t) {
    for (const Recorded& r : trace.steps) {
        const auto& paged = r.step.facts.paged;
        if (paged && paged->positions.front().position == t) return r;
    }
    throw Error("quiz: the trace has no paged cache step for position " + std::to_string(t));
}

// Decode's step 2 of token `position` (1-based).
const Recorded& token_write(const Trace& trace, std::size_t position) {
    for (const Recorded& r : trace.steps) {
        const auto& token = r.step.facts.token;
        if (r.step.kind == StepKind::Cache && token && token->position == position) return r;
    }
    throw Error("quiz: the trace has no cache step for token " + std::to_string(position));
}

std::vector<const Recorded*> of_kind(const Trace& trace, StepKind kind) {
    std::vector<const Recorded*> found;
    for (const Recorded& r : trace.steps) {
        if (r.step.kind == kind) found.push_back(&r);
    }
    if (found.empty()) throw Error("quiz: the trace has no step of the kind asked");
    return found;
}

std::uint64_t keys_seen(const std::vector<bool>& row) {
    return std::uint64_t(std::count(row.begin(), row.end(), true));
}

// Paged KV: the physical block and slot of one position, through the block table.
Question paged_place_question(Random& random, const Layer& l) {
    const std::size_t sizes[] = {2, 3, 4};
    const std::size_t T = draw(random, 3, 12), S = sizes[draw(random, 0, 2)];
    const std::size_t seed = draw(random, 1, 99), t = draw(random, 0, T - 1);
    const Trace trace = traced_with(l, {"--decode", std::to_string(T), "--kv-block-size",
                                        std::to_string(S), "--kv-pool-seed", std::to_string(seed)});
    const std::vector<std::size_t>& table = paged_write(trace, T - 1).step.facts.paged->tables[0];
    const Recorded& written = paged_write(trace, t);
    const PagedPosition& at = written.step.facts.paged->positions.front();
    return {Topic::Serving,
            "Decoding T=" + std::to_string(T) + " tokens with --kv-block-size " +
                std::to_string(S) + " --kv-pool-seed " + std::to_string(seed) +
                ", sequence 0's\nblock table ends as [" + joined(table, ", ") +
                "]. In which physical block, and at which slot\nof it, is position t=" +
                std::to_string(t) + " of sequence 0? Give the block, then the slot.",
            AnswerKind::SizeList,
            {at.block, at.slot},
            "block = block_table[t // S] = block_table[" + std::to_string(t) + " // " +
                std::to_string(S) + "] = block_table[" + std::to_string(at.entry) + "] = " +
                std::to_string(at.block) + ";\nslot = t % S = " + std::to_string(t) + " % " +
                std::to_string(S) + " = " + std::to_string(at.slot) + "\n" + written.text};
}

// Paged KV: the bytes the last blocks hold allocated but unwritten after some token.
Question fragmentation_question(Random& random, const Layer& l) {
    const std::size_t T = draw(random, 3, 12), S = draw(random, 3, 8), k = draw(random, 1, T);
    const Trace trace = traced_with(
        l, {"--decode", std::to_string(T), "--kv-block-size", std::to_string(S)});
    const Recorded& written = paged_write(trace, k - 1);
    const std::size_t unused = (k + S - 1) / S * S - k;
    return {Topic::Serving,
            "Decoding T=" + std::to_string(T) + " tokens with --kv-block-size " +
                std::to_string(S) + " (float32 K and V), once token " + std::to_string(k) +
                " is\nwritten: how many bytes do the sequences' last blocks hold allocated but not\n"
                "written yet (the internal fragmentation, all sequences, K and V)?",
            AnswerKind::Number,
            {written.step.facts.paged->unused_bytes},
            "ceil(" + std::to_string(k) + " / " + std::to_string(S) + ")·" + std::to_string(S) +
                " - " + std::to_string(k) + " = " + std::to_string(unused) +
                " slots unused per sequence;\n2 (K and V)·B·G·slots·d_k·4 bytes = " +
                product({2, l.batch, l.kv_heads, unused, l.d_k, 4}) + "\n" + written.text};
}

// A GQA cache: the bytes each token adds, G K/V heads rather than h.
Question token_bytes_question(Random& random, const Layer& l) {
    const std::size_t T = draw(random, 2, 6);
    const Trace trace = traced_with(l, {"--decode", std::to_string(T)});
    const Recorded& first = token_write(trace, 1);
    return {Topic::Serving,
            "Decoding with a float32 KV cache: how many bytes does each new token add to\n"
            "this layer's cache (all B sequences, K and V)?",
            AnswerKind::Number,
            {first.step.facts.token->cache_bytes},
            "the h=" + std::to_string(l.heads) + " query heads read G=" +
                std::to_string(l.kv_heads) + " K/V heads, so a token caches G heads of K and V:\n" +
                "2·B·G·d_k·4 bytes = " + product({2, l.batch, l.kv_heads, l.d_k, 4}) + "\n" +
                first.text};
}

// A draft tree: how many cache slots one draft token's row attends to.
Question draft_question(Random& random, const Layer& l) {
    const std::size_t P = draw(random, 1, 4), K = draw(random, 2, 5);
    std::vector<std::ptrdiff_t> parents;
    for (std::size_t i = 0; i < K; ++i) parents.push_back(std::ptrdiff_t(draw(random, 0, i)) - 1);
    const std::size_t i = draw(random, 0, K - 1);
    const Trace trace =
        traced_with(l, {"--decode", std::to_string(P + K), "--draft-tree", joined(parents)});
    const Recorded& mask = *of_kind(trace, StepKind::Mask).back();
    const std::size_t depth = mask.step.facts.draft->depths[i];
    return {Topic::Serving,
            "With --decode " + std::to_string(P + K) + " --draft-tree " + joined(parents) +
                " (each draft token's parent; -1: the\nlast cached token), the last " +
                std::to_string(K) + " tokens are a draft verified in one pass.\nHow many of the " +
                std::to_string(P + K) + " cache slots does draft token " + std::to_string(i) +
                " attend to?",
            AnswerKind::Number,
            {keys_seen(mask.step.allowed[i])},
            "the " + std::to_string(P) + " cached tokens, its " + std::to_string(depth) +
                " ancestors in the draft and itself:\nP + depth + 1 = " + std::to_string(P) +
                " + " + std::to_string(depth) + " + 1 = " + std::to_string(P + depth + 1) + "\n" +
                mask.text};
}

// A quantised cache: codes, scales and zero points after the last token.
Question quantised_bytes_question(Random& random, const Layer& l) {
    const std::size_t T = draw(random, 2, 8), bits = draw(random, 0, 1) == 0 ? 8 : 4;
    const std::size_t group = std::min<std::size_t>(l.d_k, draw(random, 0, 1) == 0 ? 2 : 4);
    const Trace trace = traced_with(
        l, {"--decode", std::to_string(T), "--kv-quant", "int" + std::to_string(bits),
            "--kv-quant-axis", "token", "--kv-quant-group", std::to_string(group)});
    const Recorded& last = *of_kind(trace, StepKind::QuantError).back();
    const KvQuantFacts& q = *last.step.facts.kv_quant;
    const std::uint64_t values = 2 * l.batch * l.kv_heads * T * l.d_k;
    return {Topic::Serving,
            "Decoding T=" + std::to_string(T) + " tokens with --kv-quant int" +
                std::to_string(bits) + " --kv-quant-axis token --kv-quant-group " +
                std::to_string(group) + ":\nevery group of " + std::to_string(group) +
                " values along d_k keeps a float32 scale and zero point. How many\n"
                "bytes does the cache hold after the last token, codes, scales and zero points?",
            AnswerKind::Number,
            {q.code_bytes + q.scale_bytes + q.float_bytes},
            "codes: 2·B·G·T·d_k = " + with_commas(values) + " values of " +
                std::to_string(bits) + " bits = " + with_commas(q.code_bytes) +
                " bytes;\nscales and zero points: (values / " + std::to_string(group) +
                ")·2·4 = " + with_commas(q.scale_bytes) + " bytes; " +
                with_commas(q.code_bytes) + " + " + with_commas(q.scale_bytes) + " = " +
                with_commas(q.code_bytes + q.scale_bytes + q.float_bytes) + "\n" + last.text};
}

// Chunked prefill: how many keys one query of a later chunk sees (the prefix and, causally,
// its own chunk).
Question chunk_question(Random& random, const Layer& l) {
    std::vector<std::size_t> chunks(draw(random, 2, 3));
    for (std::size_t& c : chunks) c = draw(random, 1, 5);
    const std::size_t c = draw(random, 1, chunks.size() - 1), i = draw(random, 0, chunks[c] - 1);
    const Trace trace = traced_with(l, {"--prefill-chunks", joined(chunks)});
    const Recorded& mask = *of_kind(trace, StepKind::Mask)[c];
    std::size_t first = 0;
    for (std::size_t j = 0; j < c; ++j) first += chunks[j];
    return {Topic::Serving,
            "With --prefill-chunks " + joined(chunks) + ", chunk " + std::to_string(c + 1) +
                " attends against the cache of the chunks before\nit. How many keys does its "
                "query " + std::to_string(i) + " (the chunk's own numbering) attend to?",
            AnswerKind::Number,
            {keys_seen(mask.step.allowed[i])},
            "the chunk starts at position p = " + std::to_string(first) + ";\nits query " +
                std::to_string(i) + " sits at p + i = " + std::to_string(first + i) +
                " and sees keys 0.." + std::to_string(first + i) + ": p + i + 1 = " +
                std::to_string(first + i + 1) + "\n" + mask.text};
}

}  // namespace

Question serving_question(Random& random) {
    const Layer l = draw_layer(random);
    Question q = [&] {
        switch (draw(random, 0, 5)) {
            case 0:
                return paged_place_question(random, l);
            case 1:
                return fragmentation_question(random, l);
            case 2:
                return token_bytes_question(random, l);
            case 3:
                return draft_question(random, l);
            case 4:
                return quantised_bytes_question(random, l);
            default:
                return chunk_question(random, l);
        }
    }();
    q.text = described(l) + ".\n" + q.text;
    return q;
}

}  // namespace mha
