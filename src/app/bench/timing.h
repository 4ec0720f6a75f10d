#pragma once
// How mha bench and mha bench --train time a run: one call by the steady clock, an engine's
// turn when engines take turns, blocks of runs back to back (--timing tight), and the spread
// of a measurement's runs.

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "app/cli/cli.h"

namespace mha {

// The times of the runs of one measurement (ms): the fastest, the median, the slowest.
struct Spread {
    double min = 0, median = 0, max = 0;
};

// How engines that are compared share the machine (--timing):
//   Turns  round after round, each engine one warmed turn (turn_ms), a pause after each;
//   Tight  in alternating blocks, each engine warmed once (warm_up) then its block's runs
//          back to back, no pause between them: what a training loop or a forward over many
//          layers sees. A pause comes before each block (with `pause`), so that no engine's
//          block starts while the last one's idle threads still poll.
enum class Timing { Turns, Tight };

// --timing's value: "turns" or "tight"; a near miss gets a did-you-mean.
Timing parse_timing(const Arg& arg);
std::string timing_name(Timing timing);

// A sentence or two for a table's notes: how the engines shared the machine.
std::string timing_note(Timing timing);

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

// --timing tight splits each engine's `repeat` timed runs into up to tight_blocks blocks, as
// even as they divide (7 -> 3, 2, 2); the engines alternate block by block.
constexpr std::size_t tight_blocks = 3;
std::vector<std::size_t> tight_block_sizes(std::size_t repeat);

// Every engine's `repeat` timed runs (ms), in engine order, taken as `timing` says; `pause`
// sleeps 0.15 s after every turn (Turns) or before every block (Tight). Tight without it, an
// engine's block began while the OpenBLAS threads of the PyTorch process timed before it
// still polled: mha's 2-thread forward at (1, 128, 512, 8) took 5.30 ms (median of 5, min
// 2.50) and its 1-thread one 5.89 ms, on the idle machine, 2026-12-07. Each engine is a function that runs once and
// returns its ms.
std::vector<std::vector<double>> time_engines(
    const std::vector<std::function<double()>>& engines, std::size_t repeat, Timing timing,
    bool pause);

// The spread of `times` (at least one).
Spread spread_of(std::vector<double> times);

// 2 x multiply-adds / time: GFLOP/s from multiply-adds and ms.
double gflops(double macs, double ms);

}  // namespace mha
