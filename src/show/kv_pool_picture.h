#pragma once
// The lesson page's memory picture of a paged KV cache (--kv-block-size), as inline SVG with
// presentation attributes only: the block pool as a grid of physical blocks, each a strip of
// S slots coloured by the sequence that owns the block (written slots filled, allocated but
// unwritten slots outlined, free blocks blank), beside each sequence's block table (logical
// block -> physical block), the traced position's entry, block and slot outlined in black.

#include "core/pass/step.h"

#include <cstdint>
#include <ostream>

namespace mha {

// Pools of more slots than this are described in words, not drawn.
inline constexpr std::size_t max_pictured_slots = 256;

// Whether the pool is small enough to draw.
bool pool_pictured(const PagedFacts& paged);

// The <svg> element for the pool at this step; the traced position is paged.positions.back().
void write_kv_pool_svg(std::ostream& out, const PagedFacts& paged);

// At least as many bytes as write_kv_pool_svg writes for any pool it draws.
inline constexpr std::uint64_t max_pool_picture_bytes = 160 << 10;

}  // namespace mha
