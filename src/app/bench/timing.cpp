// The steady clock's ms, an engine's warmed and paused turn, tight blocks, and the spread of
// the runs.

#include "app/bench/timing.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

#include "core/error.h"

namespace mha {

namespace {

const std::map<std::string, Timing> timing_names = {{"turns", Timing::Turns},
                                                    {"tight", Timing::Tight}};

// Untimed runs until they have taken turn_warm_ms (one only when it takes turn_alone_ms or
// more): the engine's threads awake, its tensors back in the caches.
void warm_up(const std::function<double()>& run_ms) {
    double spent = run_ms();
    if (spent >= turn_alone_ms) return;
    while (spent < turn_warm_ms) spent += run_ms();
}

}  // namespace

Timing parse_timing(const Arg& arg) {
    const auto found = timing_names.find(arg.text);
    if (found != timing_names.end()) return found->second;
    throw Error(arg.option + " expects turns or tight, got '" + arg.text + "'" +
                did_you_mean(arg.text, {"turns", "tight"}));
}

std::string timing_name(Timing timing) { return timing == Timing::Tight ? "tight" : "turns"; }

std::string timing_note(Timing timing) {
    if (timing == Timing::Tight)
        return "--timing tight: each engine\nran its runs back to back after untimed runs for "
               "25 ms, the engines alternating in up to\nthree blocks, a 0.15 s pause before "
               "each block";
    return "--timing turns: the engines\ntook turns, round after round, a 0.15 s pause after "
           "every turn; a turn is untimed runs for\n25 ms, then one timed (a run of 0.25 s or "
           "more is timed as it comes)";
}

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

std::vector<std::size_t> tight_block_sizes(std::size_t repeat) {
    const std::size_t blocks = std::min(repeat, tight_blocks);
    std::vector<std::size_t> sizes;
    for (std::size_t b = 0; b < blocks; ++b) sizes.push_back(repeat / blocks + (b < repeat % blocks));
    return sizes;
}

std::vector<std::vector<double>> time_engines(
    const std::vector<std::function<double()>>& engines, std::size_t repeat, Timing timing,
    bool pause) {
    std::vector<std::vector<double>> times(engines.size());
    if (timing == Timing::Turns) {
        for (std::size_t round = 0; round < repeat; ++round) {
            for (std::size_t e = 0; e < engines.size(); ++e)
                times[e].push_back(turn_ms(engines[e], pause));
        }
        return times;
    }
    for (const std::size_t block : tight_block_sizes(repeat)) {
        for (std::size_t e = 0; e < engines.size(); ++e) {
            if (pause) std::this_thread::sleep_for(std::chrono::milliseconds(150));
            warm_up(engines[e]);
            for (std::size_t r = 0; r < block; ++r) times[e].push_back(engines[e]());
        }
    }
    return times;
}

Spread spread_of(std::vector<double> times) {
    std::sort(times.begin(), times.end());
    return {times.front(), times[times.size() / 2], times.back()};
}

double gflops(double macs, double ms) { return 2 * macs / ms / 1e6; }

}  // namespace mha
