// The pool order of a paged KV cache, and the cached forms' memory.

#include "app/run/kv_pool.h"

#include <random>
#include <utility>

#include "app/run/kv_quant_options.h"
#include "core/checked.h"
#include "core/forms/decode.h"
#include "core/forms/draft.h"
#include "core/forms/prefill.h"
#include "io/mt19937.h"

namespace mha {

namespace {

// A draw from [0, n), n >= 1, each value equally likely.
std::size_t uniform_below(std::uint32_t n, Mt19937& engine) {
    const std::uint64_t range = std::uint64_t(1) << 32;
    const std::uint64_t limit = range - range % n;
    std::uint64_t draw = engine();
    while (draw >= limit) draw = engine();
    return std::size_t(draw % n);
}

}  // namespace

std::vector<std::size_t> pool_order(std::size_t blocks, std::optional<std::uint64_t> seed) {
    std::vector<std::size_t> order(blocks);
    for (std::size_t i = 0; i < blocks; ++i) order[i] = i;
    if (!seed || blocks < 2) return order;
    std::seed_seq sequence{std::uint32_t(*seed), std::uint32_t(*seed >> 32)};
    Mt19937 engine(sequence);
    for (std::size_t i = blocks - 1; i > 0; --i)
        std::swap(order[i], order[uniform_below(std::uint32_t(i + 1), engine)]);
    return order;
}

std::optional<KvPaging> kv_paging(const Config& c, std::size_t batch, std::size_t length) {
    if (!c.kv_block_size) return std::nullopt;
    const std::size_t blocks = std::size_t(
        checked_product({batch, blocks_for(length, *c.kv_block_size)}, "the paged KV cache's pool"));
    return KvPaging{*c.kv_block_size, pool_order(blocks, c.kv_pool_seed)};
}

std::uint64_t cached_form_bytes(const Config& c, const Sizes& s, AttentionPath path,
                                std::size_t threads) {
    if (!c.draft_tree.empty()) return draft_bytes(s, c.draft_tree.size());
    const bool chunked = !c.prefill_chunks.empty();
    const std::uint64_t unpaged =
        chunked ? prefill_bytes(s, c.prefill_chunks, path, threads)
                : checked_sum({decode_bytes(s, path), kv_quant_bytes_of(c, s, path)},
                              "the memory for decoding");
    if (!c.kv_block_size) return unpaged;
    return checked_sum({unpaged, paged_extra_bytes(s, *c.kv_block_size, threads, chunked)},
                       "the memory for the paged KV cache");
}

}  // namespace mha
