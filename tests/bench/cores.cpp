// Whether the machine's processors are whole cores right now: the same arithmetic-only work
// (sums held in registers, nothing read from memory) timed on one thread and then on T
// threads at once, in samples one after another. On T whole cores, T threads finish in the
// time one takes (scaling T); when the processors share a core, as a virtual machine's can
// when the host places them there, scaling drops towards 1, and every timing taken then
// (mha bench, PyTorch's) is slower by that much. Run it before and after a benchmark.
//
// Then, on x86 with FMA, whether the host is slowing separate multiplies and adds (what the
// kernels do: no FMA, so that every variant gives the same bits) more than fused ones: two
// register-only loops, 12 vmulps + vaddps pairs and 12 vfmadd231ps, alternated in short runs on
// one thread: their medians and bests, and how many runs fell below 90% of their loop's best.
// On AMD's cores (adds on pipes of their own) both reach the same rate on a quiet host; on a
// Zen 3 host the first fell below 90% of its best in 17-60 of 100 runs while the second did in
// 0-1, and in a longer slow period its median sat at 74 GFLOP/s against the FMA's 101
// (docs/performance.md).
//
//   build/bench_cores [samples] [threads]

#include <algorithm>
#include <cstdio>
#include <thread>
#include <vector>

#include "timing.h"

namespace {

// 64 independent running sums, each adding the same product at every step: the multiply and
// add units are busy and nothing leaves the registers and the first-level cache.
float spin(std::size_t steps, float seed) {
    constexpr std::size_t lanes = 64;
    float sums[lanes], x[lanes];
    for (std::size_t i = 0; i < lanes; ++i) {
        sums[i] = 0.0f;
        x[i] = seed + 1e-3f * float(i);
    }
    for (std::size_t s = 0; s < steps; ++s) {
        for (std::size_t i = 0; i < lanes; ++i) sums[i] += x[i] * 0.999f;
    }
    float total = 0.0f;
    for (float v : sums) total += v;
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
    // about 0.1 s of work a thread on a core of 2026 (AMD Zen 4)
    constexpr std::size_t steps = 40'000'000;
    std::vector<float> results(threads);
    std::size_t shared = 0;
    std::printf(
        "the same work on 1 thread, then on %zu at once; scaling = %zu x one's time / "
        "their time\n",
        threads, threads);
    for (std::size_t sample = 1; sample <= samples; ++sample) {
        const double one = bench::time_ms([&] { results[0] = spin(steps, 1.0f); });
        const double all = bench::time_ms([&] {
            std::vector<std::thread> workers;
            for (std::size_t t = 1; t < threads; ++t)
                workers.emplace_back([&results, t] { results[t] = spin(steps, float(t)); });
            results[0] = spin(steps, 0.0f);
            for (std::thread& w : workers) w.join();
        });
        const double scaling = double(threads) * one / all;
        if (scaling < 0.75 * double(threads)) ++shared;
        std::printf("  sample %2zu: 1 thread %7.1f ms, %zu threads %7.1f ms: scaling %.2fx\n",
                    sample, one, threads, all, scaling);
    }
    float check = 0.0f;  // keeps the sums alive
    for (float r : results) check += r;
    std::printf("%zu of %zu samples scaled below %.2fx: %s (checksum %g)\n", shared, samples,
                0.75 * double(threads),
                shared == 0 ? "whole cores throughout"
                            : "the threads shared cores then; timings taken then run slow",
                double(check));
#if defined(__x86_64__)
    multiply_then_add_against_fma(5 * samples);
#endif
    return 0;
}
