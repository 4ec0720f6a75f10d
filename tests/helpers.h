#pragma once
// Shared by the test files: running the built binary, comparing tensors, temp paths.

#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace test {

struct RunResult {
    int status;
    std::string output;  // stdout and stderr together
};

// Runs a shell command and collects what it prints.
inline RunResult run_command(const std::string& command) {
    FILE* pipe = popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    std::string output;
    char buffer[4096];
    std::size_t n;
    while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, n);
    const int status = pclose(pipe);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

// Runs $MHA_BIN (make test sets it), else ../build/mha (the tests run from tests/).
inline RunResult run_mha(const std::string& args, bool with_stderr = true) {
    const char* binary = std::getenv("MHA_BIN");
    return run_command(std::string(binary ? binary : "../build/mha") + " " + args +
                       (with_stderr ? " 2>&1" : " 2>/dev/null"));
}

// A path in the system's temp folder, unique to this test process.
inline std::string temp_path(const std::string& name) {
    return "/tmp/mha-tests-" + std::to_string(getpid()) + "-" + name;
}

struct Difference {
    double worst = 0.0;
    std::size_t index = 0;
};

// The largest |a - b| over all elements, and where it is; NaN counts only where both are NaN.
inline Difference max_difference(const std::vector<float>& a, const std::vector<float>& b) {
    REQUIRE(a.size() == b.size());
    Difference d;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const double diff =
            (std::isnan(a[i]) && std::isnan(b[i])) ? 0.0 : std::fabs(double(a[i]) - b[i]);
        if (!(diff <= d.worst)) {
            d.worst = diff;
            d.index = i;
        }
    }
    return d;
}

// Fails with the index and the worst difference when any element differs by more than tolerance.
inline void require_close(const mha::Tensor& actual, const mha::Tensor& expected,
                          double tolerance) {
    REQUIRE(actual.shape() == expected.shape());
    const Difference d = max_difference(actual.to_vector(), expected.to_vector());
    INFO("worst difference " << d.worst << " at flat index " << d.index << " of shape "
                             << mha::to_string(expected.shape()));
    REQUIRE(d.worst <= tolerance);
}

}  // namespace test
