// Whether the machine's processors are whole cores right now, and the multiply-add peak the
// kernels can reach on them: the loop of the kernels' own register tile (tests/bench/peak.h:
// its instructions at its register width, operands in L1) timed on one thread and then on T
// threads at once, in samples one after another. On T whole cores, T threads reach T times
// one's rate (scaling T); when the processors share a core, as a virtual machine's can when
// the host places them there, scaling drops towards 1, and every timing taken then (mha
// bench, PyTorch's) is slower by that much. Run it before and after a benchmark. The best
// rates of the samples are the peak, the one figure bench_phases and bench_attention divide by
// (they measure it the same way when they start). Without FMA (the sse2 and plain kernels) a
// scalar multiply-and-add loop tells the scaling alone.
//
// Then, on x86 with FMA, whether the host is slowing separate multiplies and adds (what the
// kernels did before issue 47, and what the code outside the products still does) more than
// fused ones: two register-only loops, 12 vmulps + vaddps pairs and 12 vfmadd231ps, alternated
// in short runs on one thread: their medians and bests, and how many runs fell below 90% of
// their loop's best. On AMD's cores (adds on pipes of their own) both reach the same rate on a
// quiet host; on a Zen 3 host the first fell below 90% of its best in 17-60 of 100 runs while
// the second did in 0-1, and in a longer slow period its median sat at 74 GFLOP/s against the
// FMA's 101 (docs/performance.md).
//
//   build/bench_cores [samples] [threads]

#include <algorithm>
#include <cstdio>
#include <thread>
#include <vector>

#include "peak.h"
#include "timing.h"

namespace {

// GFLOP/s of 64 independent running sums, each adding the same product at every step: the
// multiply and add units are busy and nothing leaves the registers and the first-level cache
// (the scaling check where there is no FMA). About 0.1 s on a core of 2026.
double spin_gflops(float seed) {
    constexpr std::size_t lanes = 64, steps = 40'000'000;
    float sums[lanes], x[lanes];
    for (std::size_t i = 0; i < lanes; ++i) {
        sums[i] = 0.0f;
        x[i] = seed + 1e-3f * float(i);
    }
    const double ms = bench::time_ms([&] {
        for (std::size_t s = 0; s < steps; ++s) {
            for (std::size_t i = 0; i < lanes; ++i) sums[i] += x[i] * 0.999f;
        }
    });
    float total = 0.0f;
    for (float v : sums) total += v;
    __asm__ volatile("" : : "r"(&total) : "memory");  // keeps the sums alive
    return 2.0 * lanes * double(steps) / ms / 1e6;
}

// One thread's rate, or T threads' summed, on the tile's loop (spin_gflops without one).
double rate(bench::PeakTile tile, std::size_t threads) {
    if (tile != bench::PeakTile::None) return threads == 1 ? bench::tile_gflops(tile)
                                                           : bench::tile_gflops_together(tile, threads);
    std::vector<double> rates(threads);
    std::vector<std::thread> workers;
    for (std::size_t t = 1; t < threads; ++t)
        workers.emplace_back([&rates, t] { rates[t] = spin_gflops(float(t)); });
    rates[0] = spin_gflops(0.0f);
    for (std::thread& w : workers) w.join();
    double total = 0.0;
    for (double r : rates) total += r;
    return total;
}

#if defined(__x86_64__)
// GFLOP/s of `steps` steps of 12 independent multiply-adds on 8 floats, in ymm registers:
// fused (vfmadd231ps) or as a multiply and an add (vmulps, vaddps).
double multiply_adds(std::size_t steps, bool fused) {
    const double ms = bench::time_ms([&] {
        for (std::size_t i = 0; i < steps; ++i) {
            if (fused) {
                __asm__ volatile(
                    "vfmadd231ps %%ymm14, %%ymm15, %%ymm0\n vfmadd231ps %%ymm14, %%ymm15, %%ymm1\n"
                    "vfmadd231ps %%ymm14, %%ymm15, %%ymm2\n vfmadd231ps %%ymm14, %%ymm15, %%ymm3\n"
                    "vfmadd231ps %%ymm14, %%ymm15, %%ymm4\n vfmadd231ps %%ymm14, %%ymm15, %%ymm5\n"
                    "vfmadd231ps %%ymm14, %%ymm15, %%ymm6\n vfmadd231ps %%ymm14, %%ymm15, %%ymm7\n"
                    "vfmadd231ps %%ymm14, %%ymm15, %%ymm8\n vfmadd231ps %%ymm14, %%ymm15, %%ymm9\n"
                    "vfmadd231ps %%ymm14, %%ymm15, %%ymm10\n"
                    "vfmadd231ps %%ymm14, %%ymm15, %%ymm11\n" ::
                        : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",
                          "xmm9", "xmm10", "xmm11");
            } else {
                __asm__ volatile(
                    "vmulps %%ymm14, %%ymm15, %%ymm12\n vaddps %%ymm12, %%ymm0, %%ymm0\n"
                    "vmulps %%ymm14, %%ymm15, %%ymm13\n vaddps %%ymm13, %%ymm1, %%ymm1\n"
                    "vmulps %%ymm14, %%ymm15, %%ymm12\n vaddps %%ymm12, %%ymm2, %%ymm2\n"
                    "vmulps %%ymm14, %%ymm15, %%ymm13\n vaddps %%ymm13, %%ymm3, %%ymm3\n"
                    "vmulps %%ymm14, %%ymm15, %%ymm12\n vaddps %%ymm12, %%ymm4, %%ymm4\n"
                    "vmulps %%ymm14, %%ymm15, %%ymm13\n vaddps %%ymm13, %%ymm5, %%ymm5\n"
                    "vmulps %%ymm14, %%ymm15, %%ymm12\n vaddps %%ymm12, %%ymm6, %%ymm6\n"
                    "vmulps %%ymm14, %%ymm15, %%ymm13\n vaddps %%ymm13, %%ymm7, %%ymm7\n"
                    "vmulps %%ymm14, %%ymm15, %%ymm12\n vaddps %%ymm12, %%ymm8, %%ymm8\n"
                    "vmulps %%ymm14, %%ymm15, %%ymm13\n vaddps %%ymm13, %%ymm9, %%ymm9\n"
                    "vmulps %%ymm14, %%ymm15, %%ymm12\n vaddps %%ymm12, %%ymm10, %%ymm10\n"
                    "vmulps %%ymm14, %%ymm15, %%ymm13\n"
                    "vaddps %%ymm13, %%ymm11, %%ymm11\n" ::
                        : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",
                          "xmm9", "xmm10", "xmm11", "xmm12", "xmm13");
            }
        }
    });
    return 2.0 * 8 * 12 * double(steps) / ms / 1e6;
}

// The two loops in turn, `rounds` runs each of about 40 ms on a core of 2026 (the order swapped
// every round); how many of each fell below 90% of that loop's best.
void multiply_then_add_against_fma(std::size_t rounds) {
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return;
    constexpr std::size_t steps = 20'000'000;
    std::vector<double> separate, fused;
    for (std::size_t r = 0; r < rounds; ++r) {
        if (r % 2 == 0) fused.push_back(multiply_adds(steps, true));
        separate.push_back(multiply_adds(steps, false));
        if (r % 2 == 1) fused.push_back(multiply_adds(steps, true));
    }
    const auto best = [](const std::vector<double>& rates) {
        return *std::max_element(rates.begin(), rates.end());
    };
    const auto slow_runs = [&best](const std::vector<double>& rates) {
        return std::count_if(rates.begin(), rates.end(),
                             [top = best(rates)](double rate) { return rate < 0.9 * top; });
    };
    std::printf(
        "one thread, %zu runs each in turn, GFLOP/s: multiply then add median %.1f, best %.1f, "
        "below 90%% of its best in %td; fused median %.1f, best %.1f, below 90%% of its best in "
        "%td\n",
        rounds, bench::median_ms(separate), best(separate), slow_runs(separate),
        bench::median_ms(fused), best(fused), slow_runs(fused));
}
#endif

}  // namespace

int main(int argc, char** argv) {
    const std::size_t samples = bench::argument(argc, argv, 1, 20);
    const std::size_t threads = bench::argument(argc, argv, 2, 2);
    if (samples == 0 || threads < 2) {
        std::fprintf(stderr, "usage: bench_cores [samples >= 1] [threads >= 2]\n");
        return 2;
    }
    const bench::PeakTile tile = bench::cpu_peak_tile();
    std::printf("%s, on 1 thread, then on %zu at once; scaling = their GFLOP/s / one's\n",
                bench::peak_tile_name(tile), threads);
    std::size_t shared = 0;
    double best_one = 0.0, best_all = 0.0;
    for (std::size_t sample = 1; sample <= samples; ++sample) {
        const double one = rate(tile, 1), all = rate(tile, threads), scaling = all / one;
        if (scaling < 0.75 * double(threads)) ++shared;
        best_one = std::max(best_one, one);
        best_all = std::max(best_all, all);
        std::printf("  sample %2zu: 1 thread %6.1f GFLOP/s, %zu threads %6.1f: scaling %.2fx\n",
                    sample, one, threads, all, scaling);
    }
    std::printf("%zu of %zu samples scaled below %.2fx: %s\n", shared, samples,
                0.75 * double(threads),
                shared == 0 ? "whole cores throughout"
                            : "the threads shared cores then; timings taken then run slow");
    if (tile != bench::PeakTile::None)
        std::printf("peak (best of the samples): %.1f GFLOP/s on 1 thread, %.1f on %zu\n", best_one,
                    best_all, threads);
#if defined(__x86_64__)
    multiply_then_add_against_fma(5 * samples);
#endif
    return 0;
}
