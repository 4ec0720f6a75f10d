// parallel_for, parallel_ranges and parallel_each on a persistent std::thread pool: static
// ranges, each claimed by whichever thread comes for it first.
//
// The pool is the one process-wide object in core/: workers start the first time a call
// needs them and are reused by every later call, so a forward pass creates no threads after
// its first use. Each call publishes one job: the body, the static split of [0, units) and a
// claim word (the job's number, its range count and the next unclaimed range) that a thread
// advances with one compare-and-swap to take a range, so handing out ranges takes no lock.
// The caller takes range 0, then, like every worker, takes the next unclaimed range until
// none is left, and waits only for the ranges workers took. On a shared machine a woken
// worker can wait milliseconds for a core (or be placed on the caller's): the caller then
// runs the ranges that worker would have, instead of sitting idle. Which thread runs a range
// never changes what the range computes. No locks are taken inside the ranges.
// Between jobs a worker spins for about a millisecond (the phases of a pass follow each
// other within microseconds to a few hundred, and waking a sleeping thread costs tens of
// them), then sleeps on a condition variable; a caller waiting for its workers does the same.
// A call wakes, and takes help from, at most as many workers as it has threads beyond the
// caller (a join word like the claim word counts them), not the whole pool: parallel_each
// has more ranges than threads.

#include "core/threads/parallel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace mha {

namespace {

using Body = std::function<void(std::size_t, std::size_t)>;

// True on a pool worker, and on a caller while it runs its ranges.
thread_local bool inside_job = false;

// Which of its call's threads this one is while it runs a job's ranges: 0 on the caller, then
// 1, 2, ... on the workers in the order they joined the job.
thread_local std::size_t job_slot = 0;

// How long a thread spins before it sleeps on a condition variable.
constexpr std::chrono::microseconds spin_time{1000};

// Spins, offering its core to any other runnable thread, until done() holds or spin_time has
// passed; true if it holds.
template <typename Done>
bool spin(Done done) {
    const auto until = std::chrono::steady_clock::now() + spin_time;
    for (int spins = 0;; ++spins) {
        if (done()) return true;
        if (spins % 64 == 63 && std::chrono::steady_clock::now() > until) return false;
        std::this_thread::yield();
    }
}

// The claim word: the job's number (bits 32-63), its range count (16-31), the next range to
// claim (0-15).
constexpr std::uint64_t field = 0xffff;
std::uint64_t job_of(std::uint64_t word) { return word >> 32; }
std::size_t ranges_of(std::uint64_t word) { return std::size_t(word >> 16 & field); }
std::size_t next_of(std::uint64_t word) { return std::size_t(word & field); }

class WorkerPool {
public:
    // Ranges one call can have: they must fit the claim word's fields.
    static constexpr std::size_t max_ranges = field;

    ~WorkerPool() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stopping_ = true;
        }
        wake_.notify_all();
        for (std::thread& t : workers_) t.join();
    }

    // Runs body on `ranges` static ranges of [0, units); range 0 on the caller, the others on
    // it and `helpers` workers.
    void run(std::size_t units, std::size_t ranges, std::size_t helpers, const Body& body) {
        std::lock_guard<std::mutex> turn(caller_);
        grow(helpers);
        std::vector<std::exception_ptr> errors(ranges);
        body_ = &body;
        units_ = units;
        ranges_ = ranges;
        errors_ = &errors;
        finished_.store(0, std::memory_order_relaxed);
        const std::uint64_t job = job_of(claim_.load(std::memory_order_relaxed)) + 1;
        // none joined yet; published with the claim word
        joined_.store(job << 32 | std::uint64_t(helpers) << 16, std::memory_order_relaxed);
        claim_.store(job << 32 | std::uint64_t(ranges) << 16 | 1);  // range 0 is the caller's
        if (sleepers_.load() > 0) {  // wakes as many as the job has helpers, not the pool
            std::lock_guard<std::mutex> lock(mutex_);
            for (std::size_t w = 0; w < helpers; ++w) wake_.notify_one();
        }
        inside_job = true;
        job_slot = 0;
        run_range(0);
        std::size_t mine = 1;  // ranges the caller ran
        for (std::size_t r = claim(job); r < ranges; r = claim(job)) {
            run_range(r);
            ++mine;
        }
        inside_job = false;
        const auto all_done = [&] { return finished_.load() + mine == ranges; };
        if (!spin(all_done)) {
            std::unique_lock<std::mutex> lock(mutex_);
            caller_asleep_ = true;
            done_.wait(lock, all_done);
            caller_asleep_ = false;
        }
        for (const std::exception_ptr& e : errors) {
            if (e) std::rethrow_exception(e);
        }
    }

private:
    // The next unclaimed range of job `job`, now claimed; a value past its ranges when it has
    // none left (or another job has replaced it).
    std::size_t claim(std::uint64_t job) {
        std::uint64_t word = claim_.load(std::memory_order_acquire);
        while (job_of(word) == job && next_of(word) < ranges_of(word)) {
            if (claim_.compare_exchange_weak(word, word + 1, std::memory_order_acq_rel,
                                             std::memory_order_acquire)) {
                return next_of(word);
            }
        }
        return max_ranges;
    }

    // Whether this worker may help with job `job`: true for the first helpers that ask, so a
    // pool grown by an earlier call with more threads does not exceed this call's; then it
    // takes the next job_slot.
    bool join(std::uint64_t job) {
        std::uint64_t word = joined_.load(std::memory_order_acquire);
        while (job_of(word) == job && next_of(word) < ranges_of(word)) {
            if (joined_.compare_exchange_weak(word, word + 1, std::memory_order_acq_rel,
                                              std::memory_order_acquire)) {
                job_slot = next_of(word) + 1;
                return true;
            }
        }
        return false;
    }

    void run_range(std::size_t r) {
        try {
            (*body_)(units_ * r / ranges_, units_ * (r + 1) / ranges_);
        } catch (...) {
            (*errors_)[r] = std::current_exception();
        }
    }

    void grow(std::size_t wanted) {
        while (workers_.size() < wanted) workers_.emplace_back([this] { work(); });
    }

    // A worker: waits for each new job and runs the ranges of it nobody has claimed yet.
    void work() {
        inside_job = true;
        std::uint64_t seen = 0;  // the last job this worker looked at
        const auto woken = [&] { return stopping_ || job_of(claim_.load()) != seen; };
        for (;;) {
            if (!spin(woken)) {
                std::unique_lock<std::mutex> lock(mutex_);
                ++sleepers_;
                wake_.wait(lock, woken);
                --sleepers_;
            }
            if (stopping_) return;
            seen = job_of(claim_.load(std::memory_order_acquire));
            if (!join(seen)) continue;  // the job has all the helpers it asked for
            for (std::size_t r = claim(seen); r < max_ranges; r = claim(seen)) {
                run_range(r);
                ++finished_;
                if (caller_asleep_) {
                    std::lock_guard<std::mutex> lock(mutex_);
                    done_.notify_one();
                }
            }
        }
    }

    std::mutex caller_;  // one job at a time
    std::mutex mutex_;   // for sleeping and waking only
    std::condition_variable wake_, done_;
    std::vector<std::thread> workers_;
    // the job: set by the caller before it publishes the claim word, read by a thread only
    // after it has claimed one of the job's ranges (the job outlives its ranges)
    const Body* body_ = nullptr;
    std::size_t units_ = 0, ranges_ = 0;
    std::vector<std::exception_ptr>* errors_ = nullptr;
    std::atomic<std::uint64_t> claim_{0};
    // laid out as the claim word: the job's number, the helpers it may have, those joined
    std::atomic<std::uint64_t> joined_{0};
    std::atomic<std::size_t> finished_{0};  // ranges of the job workers have run
    std::atomic<std::size_t> sleepers_{0};  // workers asleep on wake_
    std::atomic<bool> caller_asleep_{false}, stopping_{false};
};

WorkerPool& pool() {
    static WorkerPool instance;
    return instance;
}

// The workers a call of `ranges` ranges on `threads` threads takes beside its caller.
std::size_t helpers_for(std::size_t threads, std::size_t ranges) {
    return std::min(threads, ranges) > 1 ? std::min(threads, ranges) - 1 : 0;
}

}  // namespace

std::size_t threads_for(std::uint64_t macs, std::size_t threads) {
    if (inside_job) return 1;  // a call made here runs serially: one part, not a split of them
    return std::max<std::uint64_t>(1, std::min<std::uint64_t>(threads, macs / min_shared_macs));
}

std::size_t hardware_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

void parallel_for(std::size_t units, std::size_t threads, const Body& body) {
    parallel_ranges(units, threads, threads, body);
}

void parallel_ranges(std::size_t units, std::size_t ranges, std::size_t threads, const Body& body) {
    ranges = std::max<std::size_t>(1, std::min({ranges, units, WorkerPool::max_ranges}));
    const std::size_t helpers = helpers_for(threads, ranges);
    if (helpers == 0 || inside_job) {
        body(0, units);
        return;
    }
    pool().run(units, ranges, helpers, body);
}

void parallel_each(std::size_t units, std::size_t threads,
                   const std::function<void(std::size_t, std::size_t)>& body) {
    const std::size_t helpers = helpers_for(threads, units);
    if (helpers == 0 || inside_job || units > WorkerPool::max_ranges) {  // serially, slot 0
        for (std::size_t unit = 0; unit < units; ++unit) body(unit, 0);
        return;
    }
    pool().run(units, units, helpers, [&](std::size_t begin, std::size_t end) {
        for (std::size_t unit = begin; unit < end; ++unit) body(unit, job_slot);
    });
}

}  // namespace mha
