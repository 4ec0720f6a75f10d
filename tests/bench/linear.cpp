// Times one projection y = x Wᵀ + b alone, as the pass and a checkpoint's layers run it
// (project_into on W packed once, pack_linear), on 1 thread and on T, interleaved; prints
// the medians and each one's share of the multiply-add peak of its threads (tests/bench/peak.h,
// measured at the start). The sizes of a real model's products, one at a time: GPT-2 small's
// at N = 128 are 128 768 2304 (c_attn), 128 768 768, 128 768 3072 and 128 3072 768 (the
// MLP's output) and 128 768 50257 (the LM head).
//
//   build/bench_linear ROWS IN OUT [repeat] [threads]
//
// Work counted: 2·ROWS·IN·OUT flops.

#include <cstdio>
#include <vector>

#include "core/kernels/kernels.h"
#include "core/pass/projection.h"
#include "io/init.h"
#include "kernel_peak.h"
#include "timing.h"

int main(int argc, char** argv) {
    using bench::argument;
    if (argc < 4) {
        std::fprintf(stderr, "usage: bench_linear ROWS IN OUT [repeat] [threads]\n");
        return 2;
    }
    const std::size_t rows = argument(argc, argv, 1, 1), in = argument(argc, argv, 2, 1),
                      out = argument(argc, argv, 3, 1), repeat = argument(argc, argv, 4, 21),
                      threads = argument(argc, argv, 5, 2);
    if (rows == 0 || in == 0 || out == 0 || repeat == 0 || threads == 0) {
        std::fprintf(stderr, "bench_linear: every size, the repeat and the threads must be >= 1\n");
        return 2;
    }
    mha::Random random(1, 1);
    std::vector<float> x(rows * in), w(out * in), bias(out), y(rows * out);
    for (std::vector<float>* t : {&x, &w, &bias}) random.uniform(-1.0f, 1.0f, t->data(), t->size());
    const mha::PackedLinear packed = mha::pack_linear(w.data(), out, in);
    const std::vector<mha::LinearTarget> target{
        {w.data(), bias.data(), y.data(), out, packed.for_kernels()}};
    const std::vector<std::size_t> settings{1, threads};
    std::vector<std::vector<double>> ms(settings.size());
    for (std::size_t s = 0; s < settings.size(); ++s)  // warm-up: workers started, W in cache
        mha::project_into(x.data(), rows, in, target, settings[s]);
    for (std::size_t r = 0; r < repeat; ++r) {
        for (std::size_t s = 0; s < settings.size(); ++s) {
            ms[s].push_back(bench::time_ms(
                [&] { mha::project_into(x.data(), rows, in, target, settings[s]); }));
        }
    }
    std::printf("(%zu, %zu) x (%zu, %zu)ᵀ, W packed, kernels %s, median of %zu\n", rows, in, out,
                in, mha::kernel_variant_name(), repeat);
    const double flops = 2.0 * double(rows) * double(in) * double(out);
    for (std::size_t s = 0; s < settings.size(); ++s) {
        const double median = bench::median_ms(ms[s]), rate = flops / median / 1e6;
        const double peak = bench::kernel_peak(settings[s]);
        std::printf("  %zu thread(s) %10.3f ms %8.1f GFLOP/s%s\n", settings[s], median, rate,
                    bench::share_of_peak(rate, peak).c_str());
    }
    return 0;
}
