#pragma once
// The peak of the kernels in use (tests/bench/peak.h), for the benchmarks that run them.

#include <cstddef>

#include "core/kernels/kernels.h"
#include "peak.h"

namespace bench {

// The peak of `threads` threads at once on the tile of the kernels in use (the best of five
// runs of its loop), or 0 where they have no FMA (sse2, plain).
inline double kernel_peak(std::size_t threads) {
    const mha::KernelVariant v = mha::kernel_variant();
    const PeakTile tile = v == mha::KernelVariant::Avx512 ? PeakTile::Avx512
                          : v == mha::KernelVariant::Avx2 ? PeakTile::Avx2
                                                          : PeakTile::None;
    return tile_peak(tile, threads, 5);
}

}  // namespace bench
