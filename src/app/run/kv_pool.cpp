// The pool order of a paged KV cache, and what the cached forms hold outside their tensors.

#include "app/run/kv_pool.h"

#include <random>
#include <utility>

#include "core/checked.h"
#include "core/pass/projection.h"
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

std::uint64_t cached_form_outside_bytes(const Config& c, const Sizes& s, const Sizes& cache,
                                        std::size_t threads) {
    const std::string what = "the memory for decoding";
    const std::uint64_t packed = c.mla_decode ? 0 : packed_weights_bytes(s);
    const bool gathers = c.kv_block_size && c.prefill_chunks.empty();  // chunks gather to tensors
    const std::uint64_t gathered =
        gathers ? checked_product(
                      {threads, cache.seq_len, cache.d_k() + cache.d_v(), sizeof(float)}, what)
                : 0;
    return checked_sum({packed, gathered}, what);
}

}  // namespace mha
