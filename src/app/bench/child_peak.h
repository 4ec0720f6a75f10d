#pragma once
// The peak resident memory of work done in a child process of its own (fork, wait4's
// ru_maxrss), as mha bench reports it beside its times.

#include <functional>

namespace mha {

// Forks; the child runs `work` and exits (0 when `work` returns, 1 when it throws; `work` may
// also exec another program). Returns the child's peak resident memory in MiB; throws
// mha::Error when the fork fails or the child does not exit with 0. Call it before this process
// starts any thread: a child has only the thread that forked it.
double child_peak_mib(const std::function<void()>& work);

}  // namespace mha
