#pragma once
// The paged KV cache as the options ask for it (--kv-block-size, --kv-pool-seed): its pool's
// order of blocks, and the memory of the cached forms (--decode, --prefill-chunks).

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

// Bytes --decode, --prefill-chunks or --draft allocates besides the inputs and weights, paged
// or not, quantised or not.
std::uint64_t cached_form_bytes(const Config& c, const Sizes& s, AttentionPath path,
                                std::size_t threads);

}  // namespace mha
