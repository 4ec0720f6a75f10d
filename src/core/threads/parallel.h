#pragma once
// parallel_for, parallel_ranges, parallel_each: split work units into static contiguous ranges
// over a persistent pool of std::threads (started on first use, reused by every later call);
// each range runs on whichever thread claims it first.

#include <cstddef>
#include <cstdint>
#include <functional>

namespace mha {

// Calls body(begin, end) on min(threads, units) disjoint ranges covering [0, units)
// (at most 65,535). The split depends only on units and threads, and each unit is
// computed by the same code whichever thread runs it, so results are bit-identical
// for every thread count. Exceptions from a worker are rethrown after all finish.
// The calling thread runs the first range; then it and the pool's workers each take
// the next range nobody has taken until none is left (a worker kept waiting for a
// core does not hold the call up: the caller runs its ranges). A call made from
// inside a running range runs serially; concurrent callers take turns.
void parallel_for(std::size_t units, std::size_t threads,
                  const std::function<void(std::size_t begin, std::size_t end)>& body);

// As parallel_for, but [0, units) is cut into min(ranges, units, 65,535) static ranges, which at
// most `threads` threads claim one at a time: for work whose ranges cost far more than a claim
// (attention units, groups of a projection's panels), cut finer than the threads so that a
// thread kept waiting for a core holds up one short range while the others take the rest. The
// split depends only on units and ranges; on one thread (or inside a running range) body(0,
// units) runs once. Either way the same bits for every thread count.
void parallel_ranges(std::size_t units, std::size_t ranges, std::size_t threads,
                     const std::function<void(std::size_t begin, std::size_t end)>& body);

// Calls body(i, slot) for every i < units (at most 65,535) on at most `threads` threads, each
// unit a range of its own that the next free thread claims: for a few large pieces of work (a
// training step's micro-batches), which the threads then share as they finish, so a thread
// kept waiting for a core holds up one piece, not a fixed half. `slot` < min(threads, units)
// names the thread that runs the unit within the call (0: the caller), so units running at
// the same time never share one: a place for per-thread memory. Which units a slot gets
// varies from call to call. Otherwise as parallel_for.
void parallel_each(std::size_t units, std::size_t threads,
                   const std::function<void(std::size_t unit, std::size_t slot)>& body);

// Multiply-adds a thread must get for its wake-up to pay: below about 2^20 (tens of
// microseconds of work) waking a worker costs more than it saves.
inline constexpr std::uint64_t min_shared_macs = std::uint64_t(1) << 20;

// The threads worth using on `macs` multiply-adds: at most `threads`, at most one per
// min_shared_macs, at least one; one inside a running range (a training step's micro-batch),
// where a call runs serially and would gain nothing from being cut for threads.
std::size_t threads_for(std::uint64_t macs, std::size_t threads);

// The hardware's thread count (at least 1).
std::size_t hardware_threads();

}  // namespace mha
