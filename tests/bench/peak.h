#pragma once
// The multiply-add peak as the kernels reach it, the one figure bench_cores prints and
// bench_phases and bench_attention divide by: a loop of the register tile's own instructions
// at the kernels' register width, on one thread and on T at once, each run's best of a few
// (x86-64 with FMA; elsewhere none). Per step of the loop, as add_products runs one step of p:
//   AVX-512, the 6x64 tile: four zmm loads of b's row, then 24 vfmadd231ps, each taking its
//                           a(i, p) from memory and broadcasting it on the way ({1to16})
//   AVX2, the 6x16 tile:    two ymm loads of b's row, then per row a vbroadcastss of a(i, p)
//                           and two vfmadd231ps
// a and b stay in L1 (the same addresses every step), so the figure is the cores' arithmetic
// alone: what a kernel would reach with every operand in L1.

#include <algorithm>
#include <cstddef>
#include <thread>
#include <vector>

#include "timing.h"

namespace bench {

// The tiles the loop can imitate; None where there is no FMA (the sse2 and plain kernels).
enum class PeakTile { None, Avx2, Avx512 };

inline const char* peak_tile_name(PeakTile tile) {
    switch (tile) {
        case PeakTile::Avx512:
            return "the avx512 kernels' 6x64 tile: vfmadd231ps zmm, a(i, p) {1to16} from memory";
        case PeakTile::Avx2:
            return "the avx2 kernels' 6x16 tile: vbroadcastss, then vfmadd231ps ymm";
        case PeakTile::None:
            break;
    }
    return "no FMA kernels: a loop of separate multiplies and adds";
}

#if defined(__x86_64__)
// `steps` steps of the AVX2 tile's loop.
__attribute__((target("avx2,fma"))) inline void avx2_tile_loop(std::size_t steps) {
    alignas(64) static thread_local float a[8] = {1, 1, 1, 1, 1, 1, 1, 1}, b[16] = {};
    for (std::size_t s = 0; s < steps; ++s) {
            __asm__ volatile(
                "vmovups (%1), %%ymm12\n vmovups 32(%1), %%ymm13\n"
                "vbroadcastss (%0), %%ymm14\n"
                "vfmadd231ps %%ymm14, %%ymm12, %%ymm0\n vfmadd231ps %%ymm14, %%ymm13, %%ymm1\n"
                "vbroadcastss 4(%0), %%ymm15\n"
                "vfmadd231ps %%ymm15, %%ymm12, %%ymm2\n vfmadd231ps %%ymm15, %%ymm13, %%ymm3\n"
                "vbroadcastss 8(%0), %%ymm14\n"
                "vfmadd231ps %%ymm14, %%ymm12, %%ymm4\n vfmadd231ps %%ymm14, %%ymm13, %%ymm5\n"
                "vbroadcastss 12(%0), %%ymm15\n"
                "vfmadd231ps %%ymm15, %%ymm12, %%ymm6\n vfmadd231ps %%ymm15, %%ymm13, %%ymm7\n"
                "vbroadcastss 16(%0), %%ymm14\n"
                "vfmadd231ps %%ymm14, %%ymm12, %%ymm8\n vfmadd231ps %%ymm14, %%ymm13, %%ymm9\n"
                "vbroadcastss 20(%0), %%ymm15\n"
                "vfmadd231ps %%ymm15, %%ymm12, %%ymm10\n vfmadd231ps %%ymm15, %%ymm13, %%ymm11\n"
                :
                : "r"(a), "r"(b)
                : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
                  "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
    }
}

// The same for the AVX-512 tile: sums in zmm0-23, b's row in zmm24-27.
__attribute__((target("avx512f,fma"))) inline void avx512_tile_loop(std::size_t steps) {
    alignas(64) static thread_local float a[8] = {1, 1, 1, 1, 1, 1, 1, 1}, b[64] = {};
    for (std::size_t s = 0; s < steps; ++s) {
            __asm__ volatile(
                "vmovups (%1), %%zmm24\n vmovups 64(%1), %%zmm25\n"
                "vmovups 128(%1), %%zmm26\n vmovups 192(%1), %%zmm27\n"
#define MHA_PEAK_ROW(offset, s0, s1, s2, s3)                       \
    "vfmadd231ps " #offset "(%0)%{1to16%}, %%zmm24, %%zmm" #s0 "\n" \
    "vfmadd231ps " #offset "(%0)%{1to16%}, %%zmm25, %%zmm" #s1 "\n" \
    "vfmadd231ps " #offset "(%0)%{1to16%}, %%zmm26, %%zmm" #s2 "\n" \
    "vfmadd231ps " #offset "(%0)%{1to16%}, %%zmm27, %%zmm" #s3 "\n"
                MHA_PEAK_ROW(0, 0, 1, 2, 3) MHA_PEAK_ROW(4, 4, 5, 6, 7)
                MHA_PEAK_ROW(8, 8, 9, 10, 11) MHA_PEAK_ROW(12, 12, 13, 14, 15)
                MHA_PEAK_ROW(16, 16, 17, 18, 19) MHA_PEAK_ROW(20, 20, 21, 22, 23)
#undef MHA_PEAK_ROW
                :
                : "r"(a), "r"(b)
                : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
                  "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17",
                  "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm24", "xmm25",
                  "xmm26", "xmm27");
    }
}
#endif

// The tile the default kernels run on this CPU (the kernels' own choice, without MHA_KERNEL).
inline PeakTile cpu_peak_tile() {
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("fma"))
        return PeakTile::Avx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return PeakTile::Avx2;
#endif
    return PeakTile::None;
}

// GFLOP/s of one run of the tile's loop, about 50 ms on a core of 2026; 0 for None.
inline double tile_gflops(PeakTile tile) {
#if defined(__x86_64__)
    constexpr std::size_t avx512_steps = 2'000'000, avx2_steps = 5'000'000;
    if (tile == PeakTile::Avx512)
        return 2.0 * 24 * 16 * avx512_steps / time_ms([] { avx512_tile_loop(avx512_steps); }) / 1e6;
    if (tile == PeakTile::Avx2)
        return 2.0 * 12 * 8 * avx2_steps / time_ms([] { avx2_tile_loop(avx2_steps); }) / 1e6;
#endif
    (void)tile;
    return 0.0;
}

// The tile's loop on `threads` threads at once: the sum of their rates.
inline double tile_gflops_together(PeakTile tile, std::size_t threads) {
    std::vector<double> rates(threads);
    std::vector<std::thread> workers;
    for (std::size_t t = 1; t < threads; ++t)
        workers.emplace_back([&rates, t, tile] { rates[t] = tile_gflops(tile); });
    rates[0] = tile_gflops(tile);
    for (std::thread& w : workers) w.join();
    double total = 0.0;
    for (double r : rates) total += r;
    return total;
}

// The peak of `threads` threads (1: one core's): the best of `runs` runs of the tile's loop.
inline double tile_peak(PeakTile tile, std::size_t threads, std::size_t runs) {
    double best = 0.0;
    for (std::size_t r = 0; r < runs; ++r)
        best = std::max(best, threads == 1 ? tile_gflops(tile) : tile_gflops_together(tile, threads));
    return best;
}

}  // namespace bench
