#pragma once
// How mha bench and mha bench --train time a run: one call by the steady clock, an engine's
// turn when engines take turns, and the spread of a measurement's runs.

#include <functional>
#include <vector>

namespace mha {

// The times of the runs of one measurement (ms): the fastest, the median, the slowest.
struct Spread {
    double min = 0, median = 0, max = 0;
};

// The ms one call of `run` takes, by the steady clock.
double time_ms(const std::function<void()>& run);

// One engine's turn, when engines take turns (--compare-torch, --train): `run_ms` once, and
// when that took under turn_alone_ms, again until its runs have taken turn_warm_ms, then once
// more, timed. The first run after a pause wakes the engine's threads and
// brings its tensors back into the caches the other engines used; here a 2 ms forward pass
// ran 1.7x slower first after a 0.15 s pause, 1.14x second, and at its usual speed from
// about 6 ms in. A run of 0.25 s or more streams through far more memory than the caches hold
// and is timed as it comes. Then, with `pause`, 0.15 s, so that the threads an engine leaves
// polling have gone to sleep before the next engine starts: OpenBLAS's idle threads poll for
// about 0.1 s after a call (torch 1.13 here, OPENBLAS_NUM_THREADS=2: 60-70 ms of CPU time in
// the 0.2 s after one 4096 x 64 x 256 product; with 1 BLAS thread none). Returns the timed
// run's ms.
constexpr double turn_alone_ms = 250, turn_warm_ms = 25;
double turn_ms(const std::function<double()>& run_ms, bool pause);

// The spread of `times` (at least one).
Spread spread_of(std::vector<double> times);

}  // namespace mha
