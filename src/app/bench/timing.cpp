// The steady clock's ms, an engine's warmed and paused turn, and the spread of the runs.

#include "app/bench/timing.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace mha {

double time_ms(const std::function<void()>& run) {
    const auto start = std::chrono::steady_clock::now();
    run();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
        .count();
}

double turn_ms(const std::function<double()>& run_ms, bool pause) {
    double ms = run_ms();
    if (ms < turn_alone_ms) {
        for (double spent = ms; spent < turn_warm_ms;) spent += run_ms();
        ms = run_ms();
    }
    if (pause) std::this_thread::sleep_for(std::chrono::milliseconds(150));
    return ms;
}

Spread spread_of(std::vector<double> times) {
    std::sort(times.begin(), times.end());
    return {times.front(), times[times.size() / 2], times.back()};
}

}  // namespace mha
