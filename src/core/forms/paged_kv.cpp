// The KV cache of the cached forms, contiguous or paged through block tables.
//
//   contiguous   K_cache (B, G, T, d_k): position t of sequence b at K_cache[b, :, t]
//   paged        K_pool (B·blocks, G, S, d_k), blocks = ceil(T / S), and a block table per
//                sequence: position t of sequence b at K_pool[block_table[b][t // S], :, t % S]
// A pass reads a unit's positions [0, length) as one (length, d_k) matrix: in place when
// contiguous, gathered block by block when paged. Either way the kernels see the same numbers
// with the same strides, so a paged cache gives the contiguous cache's bits.

#include "core/forms/paged_kv.h"

#include <utility>

#include <algorithm>
#include <atomic>

#include "core/checked.h"
#include "core/error.h"
#include "core/tensor/scratch.h"

namespace mha {

namespace {

// One thread's gathered rows and what they are: positions [0, length) of kv head g of sequence
// b of the pool at `pool`, as the cache's write `written` left it. The query heads of a GQA
// group read the same rows, and a thread often runs several of them in a row: it gathers them
// once.
struct Gathered {
    ScratchBuffer rows;
    const float* pool = nullptr;
    std::uint64_t written = 0;  // 0: nothing gathered yet
    std::size_t b = 0, g = 0, length = 0;

    bool holds(const float* p, std::uint64_t w, std::size_t b_, std::size_t g_,
               std::size_t length_) const {
        return pool == p && written == w && b == b_ && g == g_ && length == length_;
    }
};

// This thread's gathered keys and values, kept between units.
struct GatherScratch {
    Gathered keys, values;
};

GatherScratch& gather_scratch() {
    thread_local GatherScratch scratch;
    return scratch;
}

bool in_order(const std::vector<std::size_t>& order) {
    for (std::size_t i = 0; i < order.size(); ++i) {
        if (order[i] != i) return false;
    }
    return true;
}

// A number no cache's write had before in this process: what a gathered copy is keyed by.
std::uint64_t next_write() {
    static std::atomic<std::uint64_t> count{0};
    return ++count;
}

// A paging that names every one of B · blocks physical blocks once; throws mha::Error if not.
void check_paging(const KvPaging& paging, std::size_t batch, std::size_t blocks) {
    const std::size_t pool = paging.pool_order.size();
    if (pool != batch * blocks) {
        throw Error("a paged KV cache of " + std::to_string(batch) + " sequences of " +
                    std::to_string(blocks) + " blocks needs a pool order of " +
                    std::to_string(batch * blocks) + " blocks, not " + std::to_string(pool));
    }
    std::vector<bool> seen(pool, false);
    for (std::size_t block : paging.pool_order) {
        if (block >= pool || seen[block]) {
            throw Error("a paged KV cache's pool order must name each of its " +
                        std::to_string(pool) + " blocks once; block " + std::to_string(block) +
                        " is out of range or named twice");
        }
        seen[block] = true;
    }
}

}  // namespace

std::size_t blocks_for(std::size_t length, std::size_t block_size) {
    return length / block_size + (length % block_size != 0);
}

KvCache::KvCache(const Sizes& s, const KvPaging* paging, Workspace* workspace)
    : sizes_(s), paging_(paging) {
    const std::size_t B = s.batch, G = s.kv_heads, T = s.seq_len, d_k = s.d_k(), d_v = s.d_v();
    if (!paging_) {
        k_ = new_tensor(workspace, {B, G, T, d_k});
        v_ = new_tensor(workspace, {B, G, T, d_v});
        return;
    }
    const std::size_t S = paging_->block_size;
    if (S == 0) throw Error("a paged KV cache needs blocks of at least 1 position, not 0");
    blocks_ = blocks_for(T, S);
    check_paging(*paging_, B, blocks_);
    checked_product({B, blocks_, G, S, d_k + d_v}, "the paged KV cache's pool");
    k_ = new_tensor(workspace, {B * blocks_, G, S, d_k});
    v_ = new_tensor(workspace, {B * blocks_, G, S, d_v});
}

KvCache::KvCache(const Sizes& s, Tensor k, Tensor v)
    : sizes_(s), paging_(nullptr), k_(std::move(k)), v_(std::move(v)) {}

const Tensor& KvCache::contiguous_keys() const {
    if (paging_) throw Error("a paged KV cache has no contiguous keys");
    return k_;
}

const Tensor& KvCache::contiguous_values() const {
    if (paging_) throw Error("a paged KV cache has no contiguous values");
    return v_;
}

PagedPosition KvCache::place(std::size_t b, std::size_t t) const {
    const std::size_t S = paging_->block_size, entry = t / S;
    return {t, entry, paging_->pool_order[b * blocks_ + entry], t % S};
}

void KvCache::write(const Tensor& k_rows, const Tensor& v_rows, std::size_t first) {
    written_ = next_write();
    write_rows(k_rows, first, k_);
    write_rows(v_rows, first, v_);
}

void KvCache::write_rows(const Tensor& projected, std::size_t first, Tensor& cache) const {
    if (any_dry(projected, cache)) return;
    const std::size_t B = sizes_.batch, G = sizes_.kv_heads, T = sizes_.seq_len;
    const std::size_t L = projected.size(1), S = paged() ? paging_->block_size : T;
    const std::size_t d_k = cache.size(3);  // d_k, or d_v for the values
    for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t l = 0; l < L; ++l) {
            // contiguous: one block of T positions per sequence, block b
            const PagedPosition at = paged() ? place(b, first + l)
                                             : PagedPosition{first + l, 0, b, first + l};
            for (std::size_t g = 0; g < G; ++g) {
                const float* from = projected.data() + ((b * L + l) * G + g) * d_k;
                std::copy(from, from + d_k, cache.data() + ((at.block * G + g) * S + at.slot) * d_k);
            }
        }
    }
}

MatrixView KvCache::keys(std::size_t b, std::size_t g, std::size_t length) const {
    return rows(k_, b, g, length, true);
}

MatrixView KvCache::values(std::size_t b, std::size_t g, std::size_t length) const {
    return rows(v_, b, g, length, false);
}

MatrixView KvCache::rows(const Tensor& cache, std::size_t b, std::size_t g, std::size_t length,
                         bool keys) const {
    const std::size_t G = sizes_.kv_heads, T = sizes_.seq_len;
    const std::size_t d_k = cache.size(3);  // d_k, or d_v for the values
    if (!paged()) return {cache.data() + (b * G + g) * T * d_k, length, d_k, d_k, 1};
    Gathered& gathered = keys ? gather_scratch().keys : gather_scratch().values;
    float* into = gathered.rows.floats(std::max<std::size_t>(length, 1) * d_k);
    if (gathered.holds(cache.data(), written_, b, g, length)) return {into, length, d_k, d_k, 1};
    gathered.pool = cache.data();
    gathered.written = written_;
    gathered.b = b;
    gathered.g = g;
    gathered.length = length;
    const std::size_t S = paging_->block_size;
    for (std::size_t first = 0; first < length; first += S) {  // one block at a time
        const std::size_t block = place(b, first).block, count = std::min(S, length - first);
        const float* from = cache.data() + (block * G + g) * S * d_k;
        std::copy(from, from + count * d_k, into + first * d_k);
    }
    return {into, length, d_k, d_k, 1};
}

Tensor KvCache::all_keys(std::size_t length, Workspace* workspace) const {
    return all_rows(k_, length, workspace, true);
}

Tensor KvCache::all_values(std::size_t length, Workspace* workspace) const {
    return all_rows(v_, length, workspace, false);
}

Tensor KvCache::all_rows(const Tensor& cache, std::size_t length, Workspace* workspace,
                         bool keys) const {
    if (!paged()) return cache.narrow(2, 0, length);
    const std::size_t B = sizes_.batch, G = sizes_.kv_heads, d_k = cache.size(3);
    if (cache.dry()) return new_dry(workspace, {B, G, length, d_k});
    Tensor all = new_uninitialised(workspace, {B, G, length, d_k});
    for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t g = 0; g < G; ++g) {
            const MatrixView gathered = rows(cache, b, g, length, keys);
            std::copy(gathered.data, gathered.data + length * d_k,
                      all.data() + (b * G + g) * length * d_k);
        }
    }
    return all;
}

Tensor KvCache::shown(std::size_t length) const {
    return (paged() ? k_ : k_.narrow(2, 0, length)).without_values();
}

std::vector<std::string> KvCache::shown_dims(const std::string& kv) const {
    if (paged()) return {"blocks", kv, "S", "d_k"};
    return {"B", kv, "t", "d_k"};
}

std::string KvCache::written(std::size_t first, std::size_t count, const std::string& name) const {
    const auto range = [](std::size_t a, std::size_t n) {
        return n == 1 ? std::to_string(a) : std::to_string(a) + ":" + std::to_string(a + n);
    };
    if (!paged()) return name + "_cache[:, :, " + range(first, count) + "]";
    const std::string S = std::to_string(paging_->block_size), t = range(first, count);
    const std::string positions = count == 1 ? t : "t";
    return name + "_pool[block_table[:, " + positions + " // " + S + "], :, " + positions + " % " + S +
           "]" + (count == 1 ? "" : " for t in " + t);
}

std::optional<PagedFacts> KvCache::facts(std::size_t first, std::size_t count) const {
    if (!paged()) return std::nullopt;
    const std::size_t S = paging_->block_size, held = first + count;
    PagedFacts facts;
    facts.block_size = S;
    facts.pool_blocks = paging_->pool_order.size();
    facts.sequences = sizes_.batch;
    facts.in_order = in_order(paging_->pool_order);
    facts.held = held;
    facts.tables.resize(sizes_.batch);
    for (std::size_t b = 0; b < sizes_.batch; ++b) {
        for (std::size_t entry = 0; entry < blocks_for(held, S); ++entry)
            facts.tables[b].push_back(paging_->pool_order[b * blocks_ + entry]);
    }
    facts.positions.push_back(place(0, first));
    if (count > 1) facts.positions.push_back(place(0, held - 1));
    const std::string what = "the paged KV cache's bytes";
    const std::size_t width = sizes_.d_k() + sizes_.d_v();  // a position's key and value
    facts.block_bytes = checked_product({sizes_.kv_heads, S, width, sizeof(float)}, what);
    const std::size_t unused = blocks_for(held, S) * S - held;
    facts.unused_bytes =
        checked_product({sizes_.batch, sizes_.kv_heads, unused, width, sizeof(float)}, what);
    return facts;
}

}  // namespace mha
