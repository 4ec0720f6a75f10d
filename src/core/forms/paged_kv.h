#pragma once
// The KV cache a cached form fills and reads (decoding, chunked prefill): contiguous, one
// (B, G, T, d_k) tensor each for K and V, or paged as a serving engine lays it out (vLLM's
// PagedAttention): a pool of physical blocks of S positions and a block table per sequence.
// Position t of sequence b lives in block block_table[b][t // S], slot t % S.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/ops/ops.h"
#include "core/pass/step.h"
#include "core/sizes.h"
#include "core/tensor/tensor.h"
#include "core/tensor/workspace.h"

namespace mha {

// How a paged cache lays out its blocks: S positions a block, and the physical block of each
// logical one: pool_order[b · blocks + j] is block j of sequence b (a permutation of
// 0 .. B·blocks − 1; in order, or shuffled to show the indirection).
struct KvPaging {
    std::size_t block_size = 0;           // S >= 1
    std::vector<std::size_t> pool_order;  // (B · blocks)
};

// Blocks of S positions that hold `length` positions: ceil(length / S).
std::size_t blocks_for(std::size_t length, std::size_t block_size);

class KvCache {
public:
    // The cache of B sequences of T positions, G key/value heads of d_k and d_v (s.seq_len,
    // s.kv_heads, s.d_k(), s.d_v(); MLA's latent cache keeps c_kv as its keys and k_pe as its
    // values): contiguous without paging, else a pool of B · ceil(T / S) blocks.
    KvCache(const Sizes& s, const KvPaging* paging, Workspace* workspace);
    // A contiguous cache over K and V already filled, (B, G, T, d_k) each: what attention reads
    // of a quantised cache (its dequantised values).
    KvCache(const Sizes& s, Tensor k, Tensor v);

    // The contiguous cache's K and V, (B, G, T, d_k) each; a paged cache refuses (--kv-quant
    // reads these and does not take --kv-block-size).
    const Tensor& contiguous_keys() const;
    const Tensor& contiguous_values() const;

    bool dry() const { return k_.dry(); }
    bool paged() const { return paging_ != nullptr; }
    std::size_t block_size() const { return paging_ ? paging_->block_size : 0; }  // S; 0 unpaged

    // Writes the (B, L, G·d_k) and (B, L, G·d_v) projections of L rows into positions
    // [first, first + L).
    void write(const Tensor& k_rows, const Tensor& v_rows, std::size_t first);

    // Positions [0, length) of kv head g of sequence b as a (length, d_k) matrix, rows d_k apart
    // (values: d_v):
    // a view of the contiguous cache, or, paged, gathered block by block through the block
    // table into this thread's scratch (valid until the thread's next keys() / values() call).
    MatrixView keys(std::size_t b, std::size_t g, std::size_t length) const;
    MatrixView values(std::size_t b, std::size_t g, std::size_t length) const;

    // Positions [0, length) of every sequence, (B, G, length, d_k): a view of the contiguous
    // cache, or, paged, copies gathered through the block tables.
    Tensor all_keys(std::size_t length, Workspace* workspace) const;
    Tensor all_values(std::size_t length, Workspace* workspace) const;

    // What step 2 shows, without values: the first `length` positions of K_cache
    // (B, G, t, d_k), or the whole pool of keys (blocks, G, S, d_k).
    Tensor shown(std::size_t length) const;
    // The names of shown()'s dims; kv is "h" or "G".
    std::vector<std::string> shown_dims(const std::string& kv) const;
    // The left side of step 2's expression for rows [first, first + count):
    // "K_cache[:, :, 3]" or "K_pool[block_table[:, 3 // 4], :, 3 % 4]"; `name` is the K.
    std::string written(std::size_t first, std::size_t count, const std::string& name = "K") const;
    // Step 2's paging facts once positions [first, first + count) are written; none unpaged.
    std::optional<PagedFacts> facts(std::size_t first, std::size_t count) const;

    // Where position t of sequence b lives: block_table[b][t // S] and slot t % S (paged only).
    PagedPosition place(std::size_t b, std::size_t t) const;

private:
    MatrixView rows(const Tensor& cache, std::size_t b, std::size_t g, std::size_t length,
                    bool keys) const;
    Tensor all_rows(const Tensor& cache, std::size_t length, Workspace* workspace,
                    bool keys) const;
    void write_rows(const Tensor& projected, std::size_t first, Tensor& cache) const;

    Sizes sizes_;
    const KvPaging* paging_;  // null: contiguous
    std::size_t blocks_ = 0;  // blocks per sequence
    Tensor k_, v_;  // (B, G, T, d_k) and (B, G, T, d_v) contiguous, or the pools
                    // (B · blocks, G, S, d_k) and (B · blocks, G, S, d_v)
    std::uint64_t written_ = 0;  // the last write's number, unique in the process (0: none yet)
};

}  // namespace mha
