// How cost grows with context (issue 47): causal self-attention on the streaming path,
// B = 1, d_model 512, h 8, forward and forward + backward at N = 1k, 4k, 16k and 64k (or the
// lengths given). Per row: the median time of its runs, the peak resident memory of the child
// process that ran them, the memory mha reports the run needs (plan_run, what --max-memory is
// checked against) and their ratio, and GFLOP/s over the multiply-adds the trace counts
// (projections and attention, from a dry run). Each row runs in a child process of its own: this
// binary again with --row.
//
//   build/bench_long_context [threads [repeat [N...]]]     (make bench-long-context)

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "app/bench/child_peak.h"
#include "app/bench/timing.h"
#include "app/run/budget.h"
#include "app/run/problem.h"
#include "core/backward/backward.h"
#include "core/error.h"
#include "core/pass/trace.h"
#include "io/dry.h"

namespace {

constexpr std::size_t d_model = 512, heads = 8;

mha::Config config_of(std::size_t n, bool backward, std::size_t threads) {
    mha::Config c;
    c.batch = 1;
    c.seq_len = n;
    c.d_model = d_model;
    c.heads = heads;
    c.causal = true;
    c.attention = mha::AttentionPath::Streaming;
    c.backward = backward;
    c.threads = threads;
    c.max_time.reset();
    c.max_memory = mha::Ledger::unlimited;
    return c;
}

mha::Sizes sizes_of(std::size_t n) {
    return {1, n, n, d_model, d_model, d_model, heads, heads, d_model / heads};
}

// The multiply-adds the trace counts, from a dry run of the same pass.
double traced_macs(std::size_t n, bool backward) {
    const mha::Sizes s = sizes_of(n);
    mha::Workspace workspace = mha::Workspace::dry();
    mha::ForwardOptions options;
    options.heads = heads;
    options.path = mha::AttentionPath::Streaming;
    options.workspace = &workspace;
    mha::Masks masks;
    masks.causal = true;
    mha::Tally tally;
    if (backward) {
        mha::forward_backward(mha::dry_weights(s, true, false), mha::dry_inputs(s, true), masks,
                              options, mha::Form::Packed,
                              mha::Tensor::shape_only({1, n, d_model}), tally);
    } else {
        mha::forward(mha::dry_weights(s, true, false), mha::dry_inputs(s, true), masks, options,
                     tally);
    }
    return double(tally.total_macs());
}

// What mha reports the run needs (the figure --max-memory is checked against).
double needed_mib(std::size_t n, bool backward, std::size_t threads) {
    mha::Masks masks;
    masks.causal = true;
    return double(mha::plan_run(config_of(n, backward, threads), sizes_of(n), 0, masks).bytes) /
           (1 << 20);
}

// --row: the pass built as mha builds it, a warm-up run, then `repeat` runs; prints the median
// ms. A first run of long_run_ms or more is the row's one run: it streams through far more
// memory than the caches hold, and a warm-up would change nothing but the wait.
constexpr double long_run_ms = 10000;
int run_row(std::size_t n, bool backward, std::size_t threads, std::size_t repeat) {
    mha::Problem p = mha::build_problem(config_of(n, backward, threads));
    mha::NullTracer none;
    const auto once = [&] {
        return mha::time_ms([&] {
            if (backward)
                mha::forward_backward(p.weights, p.inputs, p.masks, p.options, mha::Form::Packed,
                                      p.grad_output, none);
            else
                mha::forward(p.weights, p.inputs, p.masks, p.options, none);
        });
    };
    const double first = once();
    std::vector<double> times;
    if (first >= long_run_ms) times.push_back(first);
    while (times.size() < repeat && first < long_run_ms) times.push_back(once());
    std::printf("%.3f\n", mha::spread_of(times).median);
    return 0;
}

struct RowResult {
    double ms = 0, peak_mib = 0;
};

// The row run by this binary again in a child process: its printed ms and its peak memory.
RowResult measure(const char* self, std::size_t n, bool backward, std::size_t threads,
                  std::size_t repeat) {
    int ends[2];
    if (pipe(ends) != 0) throw mha::Error("bench_long_context: no pipe");
    const std::vector<std::string> args = {self,
                                           "--row",
                                           std::to_string(n),
                                           backward ? "backward" : "forward",
                                           std::to_string(threads),
                                           std::to_string(repeat)};
    RowResult r;
    r.peak_mib = mha::child_peak_mib([&] {
        std::vector<char*> argv;
        for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        dup2(ends[1], 1);
        close(ends[0]);
        execv("/proc/self/exe", argv.data());
        _exit(127);
    });
    close(ends[1]);
    char text[64] = {};
    const ssize_t got = read(ends[0], text, sizeof text - 1);
    close(ends[0]);
    if (got <= 0) throw mha::Error("bench_long_context: the row printed no time");
    r.ms = std::strtod(text, nullptr);
    return r;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        if (argc == 6 && std::string(argv[1]) == "--row")
            return run_row(std::strtoull(argv[2], nullptr, 10),
                           std::string(argv[3]) == "backward", std::strtoull(argv[4], nullptr, 10),
                           std::strtoull(argv[5], nullptr, 10));
        const std::size_t threads = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 2;
        const std::size_t repeat = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 3;
        std::vector<std::size_t> lengths = {1024, 4096, 16384, 65536};
        if (argc > 3) lengths.clear();
        for (int i = 3; i < argc; ++i) lengths.push_back(std::strtoull(argv[i], nullptr, 10));
        std::printf("causal self-attention, streaming path, B=1 d_model=%zu h=%zu, %zu threads; "
                    "ms: median of %zu run(s)\nafter a warm-up (a first run of 10 s or more is "
                    "the row's one run); peak: the child's peak resident memory;\nneeds: what mha reports "
                    "the run needs (--max-memory's check); GFLOP/s: 2 x the trace's\n"
                    "multiply-adds (projections and attention) / time\n\n",
                    d_model, heads, threads, repeat);
        std::printf("pass                    N          ms    peak MiB   needs MiB  peak/needs  "
                    "GFLOP/s\n");
        for (const bool backward : {false, true}) {
            for (const std::size_t n : lengths) {
                const double macs = traced_macs(n, backward);
                const double needs = needed_mib(n, backward, threads);
                const RowResult r = measure(argv[0], n, backward, threads, repeat);
                std::printf("%-18s %6zu %11.1f %11.1f %11.1f %10.2fx %8.1f\n",
                            backward ? "forward + backward" : "forward", n, r.ms, r.peak_mib,
                            needs, r.peak_mib / needs, mha::gflops(macs, r.ms));
                std::fflush(stdout);
            }
        }
        return 0;
    } catch (const mha::Error& e) {
        std::fprintf(stderr, "bench_long_context: %s\n", e.what());
        return 2;
    }
}
