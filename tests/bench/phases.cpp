// Times the three phases of one self-attention pass apart, interleaved, at a given thread
// count: the fused Q, K, V projection (steps 1-3), the attention core on the streaming path
// (steps 6-10) and the output projection (step 14), then the whole pass; prints medians and
// each phase's share of the multiply-add peak of the threads it ran on (tests/bench/peak.h:
// the kernels' own tile loop on that many threads at once, measured at the start; make
// bench-cores prints the same figure; the sse2 and plain kernels have none, and no share is
// printed unless a peak is given). The projections and the pass
// run twice: packing W in every call, and reading it packed once (pack_weights).
// Then forward + backward (the standard path, as mha bench --backward runs it), every step
// of its plan timed by a tracer: a step's time runs from the report before it to its own. The
// tensors one step yields (b14's dW_o, db_o and dconcat) are one row, and so are steps 1-3,
// which run as one fused product, and b1-b3, whose six products run as one call.
//
//   build/bench_phases B N d_model h [repeat] [threads] [peak GFLOP/s of the threads]
//
// Work counted (a multiply and an add per multiply-add): 2·B·N·d_model·3·d_model for
// steps 1-3, 4·B·h·N²·d_k for steps 6-10, 2·B·N·d_model² for step 14; for each traced step
// the multiply-adds its plan entry counts.

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "core/backward/backward.h"
#include "core/pass/attention.h"
#include "core/pass/projection.h"
#include "io/init.h"
#include "kernel_peak.h"
#include "timing.h"

namespace {

// A tensor of the given shape filled with uniform values in [-scale, scale].
mha::Tensor filled(mha::Random& random, const mha::Shape& shape, float scale) {
    mha::Tensor t(shape);
    for (std::size_t i = 0; i < t.numel(); ++i) t.data()[i] = random.uniform(-scale, scale);
    return t;
}

// Times every step of a traced pass: the time since the previous report goes to the step
// reported, summed over its tensors; rows in the plan's order.
class StepTimer final : public mha::Tracer {
public:
    struct Timed {
        std::string step;        // "b10 grad", "1-3 project"
        std::string tensors;     // "dV, dP"
        double macs = 0;         // of one run
        std::vector<double> ms;  // one per run
    };

    void start() {
        last_ = std::chrono::steady_clock::now();
        ++runs_;
    }

    void on_step(const mha::Step& step) override {
        const auto now = std::chrono::steady_clock::now();
        const double ms = std::chrono::duration<double, std::milli>(now - last_).count();
        last_ = now;
        const bool fused = step.number >= 1 && step.number <= 3;
        const std::string name = (step.backward ? "b" : "") +
                                 (fused ? "1-3" : std::to_string(step.number)) + " " + step.name;
        Timed* t = nullptr;
        for (Timed& each : steps_) {
            if (each.step == name) t = &each;
        }
        if (t == nullptr) {
            steps_.push_back({name, "", 0, {}});
            t = &steps_.back();
        }
        if (t->ms.size() < runs_) {  // the first report of this step in this run
            t->ms.push_back(0.0);
            t->macs = 0;
        }
        t->macs += double(step.macs);
        t->ms.back() += ms;
        if (runs_ == 1) t->tensors += (t->tensors.empty() ? "" : ", ") + step.tensor;
    }

    const std::vector<Timed>& steps() const { return steps_; }

private:
    std::chrono::steady_clock::time_point last_;
    std::size_t runs_ = 0;
    std::vector<Timed> steps_;
};

}  // namespace

int main(int argc, char** argv) {
    using bench::argument;
    using bench::median_ms;
    using bench::time_ms;
    if (argc < 5) {
        std::fprintf(stderr,
                     "usage: bench_phases B N d_model h [repeat] [threads] [peak GFLOP/s]\n");
        return 2;
    }
    const std::size_t B = argument(argc, argv, 1, 1), N = argument(argc, argv, 2, 1),
                      E = argument(argc, argv, 3, 1), h = argument(argc, argv, 4, 1),
                      repeat = argument(argc, argv, 5, 21), threads = argument(argc, argv, 6, 1),
                      d_k = E / h, rows = B * N;
    const double peak = argc > 7 ? std::atof(argv[7]) : bench::kernel_peak(threads);
    mha::Random random(1, 1);
    const float w_scale = 1.0f / std::sqrt(float(E));
    mha::Weights w;
    for (mha::Tensor* t : {&w.w_q, &w.w_k, &w.w_v, &w.w_o}) *t = filled(random, {E, E}, w_scale);
    for (mha::Tensor* t : {&w.b_q, &w.b_k, &w.b_v, &w.b_o}) *t = filled(random, {E}, 0.1f);
    const mha::Tensor x = filled(random, {B, N, E}, 1.0f);
    mha::Tensor q({B, N, E}), k({B, N, E}), v({B, N, E}), context({B, N, E}), out({B, N, E});

    const mha::PackedWeights packed = mha::pack_weights(w);
    const auto qkv_of = [&](const mha::PackedWeights* p) {
        return [&, p] {
            mha::project_into(
                x.data(), rows, E,
                {{w.w_q.data(), w.b_q.data(), q.data(), E, p ? p->q.for_kernels() : nullptr},
                 {w.w_k.data(), w.b_k.data(), k.data(), E, p ? p->k.for_kernels() : nullptr},
                 {w.w_v.data(), w.b_v.data(), v.data(), E, p ? p->v.for_kernels() : nullptr}},
                threads);
        };
    };
    const std::function<void()> qkv = qkv_of(nullptr), qkv_packed = qkv_of(&packed);
    const mha::Masks unmasked;
    const mha::HeadMask mask =
        mha::unit_mask(unmasked, 0, 0, mha::Sizes{1, N, N, E, E, E, h, h, d_k});
    const mha::Units units{B * h, [&](std::size_t u) {
                               const std::size_t b = u / h, i = u % h;
                               const std::size_t at = b * N * E + i * d_k;
                               return mha::AttentionUnit{{q.data() + at, N, d_k, E, 1},
                                                         {k.data() + at, N, d_k, E, 1},
                                                         {v.data() + at, N, d_k, E, 1},
                                                         mask,
                                                         nullptr,
                                                         context.data() + at,
                                                         E,
                                                         b,
                                                         i};
                           }};
    const mha::UnitMath math{1.0f / std::sqrt(float(d_k)), false};
    const std::function<void()> core = [&] {
        mha::run_units(mha::UnitStep::Streamed, units, math, threads);
    };
    const auto output_of = [&](const mha::PackedWeights* p) {
        return [&, p] {
            mha::project_into(
                context.data(), rows, E,
                {{w.w_o.data(), w.b_o.data(), out.data(), E, p ? p->o.for_kernels() : nullptr}},
                threads);
        };
    };
    const std::function<void()> output = output_of(nullptr), output_packed = output_of(&packed);
    mha::Workspace workspace;
    mha::ForwardOptions options;
    options.heads = h;
    options.threads = threads;
    options.path = mha::AttentionPath::Streaming;
    options.workspace = &workspace;
    mha::NullTracer quiet;
    const std::function<void()> pass = [&] {
        options.packed = nullptr;
        mha::forward(w, {x, x, x}, unmasked, options, quiet);
    };
    const std::function<void()> pass_packed = [&] {
        options.packed = &packed;
        mha::forward(w, {x, x, x}, unmasked, options, quiet);
    };

    struct Phase {
        const char* name;
        const std::function<void()>* run;
        double flops;
        std::vector<double> ms;
    };
    const double qkv_flops = 2.0 * rows * E * 3 * E, core_flops = 4.0 * B * h * N * N * d_k,
                 output_flops = 2.0 * rows * E * E;
    const double pass_flops = qkv_flops + core_flops + output_flops;
    std::vector<Phase> phases{{"Q, K, V (1-3)", &qkv, qkv_flops, {}},
                              {"  W packed", &qkv_packed, qkv_flops, {}},
                              {"core (6-10)", &core, core_flops, {}},
                              {"W_O (14)", &output, output_flops, {}},
                              {"  W packed", &output_packed, output_flops, {}},
                              {"whole pass", &pass, pass_flops, {}},
                              {"  W packed", &pass_packed, pass_flops, {}}};
    for (Phase& p : phases) (*p.run)();  // warm-up
    for (std::size_t r = 0; r < repeat; ++r) {
        for (Phase& p : phases) p.ms.push_back(time_ms(*p.run));
    }
    std::printf("(%zu,%zu,%zu,%zu), %zu thread(s), kernels %s, median of %zu; %s\n", B, N, E, h,
                threads, mha::kernel_variant_name(), repeat, bench::peak_heading(peak).c_str());
    for (const Phase& p : phases) {
        const double ms = median_ms(p.ms), rate = p.flops / ms / 1e6;
        std::printf("  %-14s %8.3f ms  %7.1f GFLOP/s%s\n", p.name, ms, rate,
                    bench::share_of_peak(rate, peak).c_str());
    }

    // forward + backward, traced step by step, against the same pass untraced
    const mha::Tensor grad_output = filled(random, {B, N, E}, 1.0f);
    mha::ForwardOptions both;
    both.heads = h;
    both.threads = threads;
    StepTimer timer;
    mha::NullTracer untraced;
    const auto run_both = [&](mha::Tracer& tracer) {
        mha::forward_backward(w, {x, x, x}, unmasked, both, mha::Form::Packed, grad_output, tracer);
    };
    run_both(untraced);  // warm-up
    std::vector<double> untraced_ms, traced_ms;
    for (std::size_t r = 0; r < repeat; ++r) {
        untraced_ms.push_back(time_ms([&] { run_both(untraced); }));
        traced_ms.push_back(time_ms([&] {
            timer.start();
            run_both(timer);
        }));
    }
    std::printf(
        "forward + backward, standard path: %.3f ms untraced, %.3f ms traced; "
        "the traced run's steps:\n",
        median_ms(untraced_ms), median_ms(traced_ms));
    for (const StepTimer::Timed& t : timer.steps()) {
        const double ms = median_ms(t.ms);
        std::printf("  %-14s %8.3f ms", t.step.c_str(), ms);
        if (t.macs > 0) {
            const double rate = 2 * t.macs / ms / 1e6;
            std::printf("  %7.1f GFLOP/s%s", rate, bench::share_of_peak(rate, peak).c_str());
        }
        std::printf("  %s\n", t.tensors.c_str());
    }
}
