// Whether the machine's processors are whole cores right now: the same arithmetic-only work
// (sums held in registers, nothing read from memory) timed on one thread and then on T
// threads at once, in samples one after another. On T whole cores, T threads finish in the
// time one takes (scaling T); when the processors share a core, as a virtual machine's can
// when the host places them there, scaling drops towards 1, and every timing taken then
// (mha bench, PyTorch's) is slower by that much. Run it before and after a benchmark.
//
//   build/bench_cores [samples] [threads]

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
    return 0;
}
