#pragma once
// What the benchmark programs of tests/bench share: timing a run, the median, arguments.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <functional>
#include <vector>

namespace bench {

inline double median_ms(std::vector<double> times) {
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

inline double time_ms(const std::function<void()>& run) {
    const auto start = std::chrono::steady_clock::now();
    run();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
        .count();
}

// argv[i] as a count, or fallback when it is not given.
inline std::size_t argument(int argc, char** argv, int i, std::size_t fallback) {
    return argc > i ? std::strtoul(argv[i], nullptr, 10) : fallback;
}

}  // namespace bench
