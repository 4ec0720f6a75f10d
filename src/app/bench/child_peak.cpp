// A child process's peak resident memory, by fork and wait4.

#include "app/bench/child_peak.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <iostream>

#include "core/error.h"

namespace mha {

double child_peak_mib(const std::function<void()>& work) {
    std::cout.flush();
    const pid_t child = fork();
    if (child < 0) throw Error("bench: cannot start a child process to measure memory");
    if (child == 0) {
        try {
            work();
        } catch (...) {
            _exit(1);
        }
        _exit(0);
    }
    int status = 0;
    rusage usage{};
    if (wait4(child, &status, 0, &usage) != child || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
        throw Error("bench: the child run for peak memory failed");
    }
    return double(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

}  // namespace mha
