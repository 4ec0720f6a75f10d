#pragma once
// The paged KV cache as the options ask for it (--kv-block-size, --kv-pool-seed): its pool's
// order of blocks, and what the cached forms (--decode, --prefill-chunks) hold outside their
// tensors.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "app/cli/config.h"
#include "core/forms/paged_kv.h"

namespace mha {

// 0 .. blocks − 1 in order, or shuffled by Fisher-Yates on std::mt19937 (seed_seq {seed's
// low 32 bits, its high 32 bits}): for i from blocks − 1 down to 1, swap entry i with entry
// j = draw mod (i + 1), a draw redrawn while it is at least 2^32 − 2^32 mod (i + 1) so that
// every j is equally likely.
std::vector<std::size_t> pool_order(std::size_t blocks, std::optional<std::uint64_t> seed);

// The paging of B sequences of `length` positions, or none without --kv-block-size.
std::optional<KvPaging> kv_paging(const Config& c, std::size_t batch, std::size_t length);

// Bytes a cached form (--decode, --prefill-chunks, --draft-tree, MLA's latent decode) holds
// outside the tensors its dry run counts: the four weights packed once for all the tokens (not
// MLA's, which it does not pack), and, paged and read one query at a time, each thread's
// gathered keys and values of a sequence (`cache`: the cache's sizes; MLA's latent and RoPE
// key, latent_cache_sizes).
std::uint64_t cached_form_outside_bytes(const Config& c, const Sizes& s, const Sizes& cache,
                                        std::size_t threads);

}  // namespace mha
