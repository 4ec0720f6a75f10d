#pragma once
// The peak of the kernels in use (tests/bench/peak.h), for the benchmarks that run them, and a
// rate's share of it as they print it.

#include <cstddef>
#include <cstdio>
#include <string>

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

// The heading's word on the peak: its figure, or that the kernels in use have none (the sse2
// and plain kernels have no FMA loop to measure; a figure given as the last argument is used).
inline std::string peak_heading(double peak) {
    if (peak <= 0) return "no peak for these kernels (give one as the last argument)";
    char text[64];
    std::snprintf(text, sizeof text, "peak %.1f GFLOP/s", peak);
    return text;
}

// "  61.2% of 226": a rate's share of the peak, or nothing without a peak.
inline std::string share_of_peak(double rate, double peak) {
    if (peak <= 0) return "";
    char text[48];
    std::snprintf(text, sizeof text, "  %5.1f%% of %.0f", 100 * rate / peak, peak);
    return text;
}

}  // namespace bench
