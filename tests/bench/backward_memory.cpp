// Peak memory of forward + backward on the two paths: each runs in a child process of its own,
// and the operating system's peak resident size of each child is compared (issue 28: at
// (1, 2048, 256, 4) causal the streaming form, keeping the row log-sum-exp (B, h, N), peaks
// at most 0.6x the standard form, keeping P (B, h, N, M) and forming dS of that size).
//
//   build/bench_backward_memory [B N d_model h [threads]]

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/backward/backward.h"
#include "io/init.h"

namespace {

// The peak resident KiB of a child process that runs forward_backward on `path`; -1 if the
// child failed.
long peak_kib(const mha::Sizes& s, std::size_t threads, mha::AttentionPath path) {
    const pid_t child = fork();
    if (child == 0) {
        const mha::Inputs in = mha::seeded_inputs(s, true, 1);
        const mha::Weights w = mha::seeded_weights(s.d_model, true, true, 1);
        mha::Masks masks;
        masks.causal = true;
        mha::ForwardOptions o;
        o.heads = s.heads;
        o.threads = threads;
        o.path = path;
        const mha::Tensor d_out = mha::seeded_inputs(s, true, 2).x_q;  // (B, N, d_model)
        mha::NullTracer none;
        const mha::BackwardResult r =
            mha::forward_backward(w, in, masks, o, mha::Form::Packed, d_out, none);
        _exit(r.grads.input.empty() ? 1 : 0);
    }
    int status = 0;
    rusage usage{};
    if (child < 0 || wait4(child, &status, 0, &usage) != child || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
        return -1;
    }
    return usage.ru_maxrss;
}

}  // namespace

int main(int argc, char** argv) {
    const auto arg = [&](int i, std::size_t fallback) {
        return argc > i ? std::size_t(std::strtoull(argv[i], nullptr, 10)) : fallback;
    };
    const std::size_t B = arg(1, 1), N = arg(2, 2048), E = arg(3, 256), h = arg(4, 4);
    const std::size_t threads = arg(5, 2);
    const mha::Sizes s{B, N, N, E, E, E, h, h, E / h};
    const long standard = peak_kib(s, threads, mha::AttentionPath::Standard);
    const long streaming = peak_kib(s, threads, mha::AttentionPath::Streaming);
    if (standard <= 0 || streaming <= 0) {
        std::fprintf(stderr, "bench_backward_memory: a child process failed\n");
        return 1;
    }
    std::printf("forward + backward, causal, B=%zu N=%zu d_model=%zu h=%zu, %zu threads\n", B, N, E,
                h, threads);
    std::printf("peak resident: standard %.1f MiB, streaming %.1f MiB: %.2fx\n", standard / 1024.0,
                streaming / 1024.0, double(streaming) / double(standard));
    return 0;
}
