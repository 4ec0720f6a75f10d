// Times the attention core alone (steps 6-10 of every (batch, head) unit, one thread, no
// projections) on both paths, interleaved: the fused tile of the streaming path and the
// standard path's gemm, scale-mask-softmax, gemm. Prints medians and the share of one thread's
// multiply-add peak (tests/bench/peak.h, measured at the start unless given).
//
//   build/bench_attention B N d_model h [repeat] [peak GFLOP/s]
//
// Work counted: 4·N·M·d_k flops per unit (Q Kᵀ and P V, a multiply and an add each).

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "core/kernels/kernels.h"
#include "core/kernels/streaming.h"
#include "io/init.h"
#include "kernel_peak.h"
#include "timing.h"

int main(int argc, char** argv) {
    using bench::argument;
    using bench::median_ms;
    using bench::time_ms;
    if (argc < 5) {
        std::fprintf(stderr, "usage: bench_attention B N d_model h [repeat] [peak GFLOP/s]\n");
        return 2;
    }
    const std::size_t B = argument(argc, argv, 1, 1), N = argument(argc, argv, 2, 1),
                      E = argument(argc, argv, 3, 1), h = argument(argc, argv, 4, 1),
                      repeat = argument(argc, argv, 5, 5), d_k = E / h, units = B * h;
    const double peak = argc > 6 ? std::atof(argv[6]) : bench::kernel_peak(1);
    mha::Random random(1, 1);
    std::vector<float> q(units * N * d_k), k(units * N * d_k), v(units * N * d_k);
    for (std::vector<float>* t : {&q, &k, &v}) random.uniform(-1.0f, 1.0f, t->data(), t->size());
    std::vector<float> context(units * N * d_k), scores(N * N);
    const mha::Masks none;
    const mha::HeadMask mask = mha::unit_mask(none, 0, 0, mha::Sizes{1, N, N, E, E, E, h, h, d_k});
    const float factor = 1.0f / std::sqrt(float(d_k));
    auto view = [&](const std::vector<float>& t, std::size_t u) {
        return mha::MatrixView{t.data() + u * N * d_k, N, d_k, d_k, 1};
    };
    const std::function<void()> fused = [&] {
        for (std::size_t u = 0; u < units; ++u) {
            mha::attend_streaming(view(q, u), view(k, u), view(v, u), mask, factor, false,
                                  context.data() + u * N * d_k, d_k);
        }
    };
    const std::function<void()> standard = [&] {
        for (std::size_t u = 0; u < units; ++u) {
            mha::gemm(view(q, u), view(k, u).transposed(), scores.data(), N);
            mha::scale_mask_softmax(scores.data(), factor, mask, false);
            mha::gemm({scores.data(), N, N, N, 1}, view(v, u), context.data() + u * N * d_k, d_k);
        }
    };
    fused();  // warm-up
    standard();
    std::vector<double> fused_ms, standard_ms;
    for (std::size_t r = 0; r < repeat; ++r) {
        fused_ms.push_back(time_ms(fused));
        standard_ms.push_back(time_ms(standard));
    }
    const double flops = 4.0 * double(units) * double(N) * double(N) * double(d_k);
    std::printf("attention core (%zu,%zu,%zu,%zu), 1 thread, kernels %s, median of %zu; %s\n", B, N,
                E, h, mha::kernel_variant_name(), repeat, bench::peak_heading(peak).c_str());
    for (const auto& [name, times] :
         {std::pair<const char*, std::vector<double>>{"fused tile", fused_ms},
          {"standard", standard_ms}}) {
        const double ms = median_ms(times), rate = flops / ms / 1e6;
        std::printf("  %-10s %9.2f ms  %7.1f GFLOP/s%s\n", name, ms, rate,
                    bench::share_of_peak(rate, peak).c_str());
    }
}
