// parallel_for on a persistent std::thread pool with static partitioning.
//
// The pool is the one process-wide object in core/: workers start the first
// time a call needs them and then sleep on a condition variable between calls,
// so a forward pass creates no threads after its first use. Each call publishes
// one job (a body and a range split), bumps a generation counter and wakes the
// workers; worker w claims range w and the caller runs range 0. When the caller
// is done with range 0 it claims and runs every range no worker has started: on a
// shared machine a woken worker can wait milliseconds for a core (or be placed on
// the caller's), and the caller would otherwise sit idle that long. Then it waits
// for the ranges the workers did claim. Which thread runs a range never changes
// what the range computes. No locks are taken inside the ranges.
// Between jobs a worker, and the caller waiting for its workers, first polls for
// a short while (phases of a pass follow each other within microseconds, and
// waking a sleeping thread costs tens of them), then sleeps.

#include "core/kernels/parallel.h"

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

// True on a pool worker, and on a caller while it runs its own range.
thread_local bool inside_job = false;

// How long a thread polls before it sleeps on a condition variable.
constexpr std::chrono::microseconds poll_time{50};

// Polls done() until it holds or poll_time has passed; true if it holds.
template <typename Done>
bool poll(Done done) {
    const auto until = std::chrono::steady_clock::now() + poll_time;
    for (int spins = 0;; ++spins) {
        if (done()) return true;
        if (spins % 64 == 63 && std::chrono::steady_clock::now() > until) return false;
        std::this_thread::yield();
    }
}

class WorkerPool {
public:
    ~WorkerPool() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stopping_ = true;
        }
        wake_.notify_all();
        for (std::thread& t : workers_) t.join();
    }

    // Runs body on `ranges` static ranges of [0, units); range 0 on the caller.
    void run(std::size_t units, std::size_t ranges,
             const std::function<void(std::size_t, std::size_t)>& body) {
        std::lock_guard<std::mutex> turn(caller_);
        grow(ranges - 1);
        std::vector<std::exception_ptr> errors(ranges);
        {
            std::lock_guard<std::mutex> lock(mutex_);
            job_ = Job{&body, units, ranges, &errors};
            claimed_.assign(ranges, false);
            claimed_[0] = true;
            ++generation_;
        }
        wake_.notify_all();
        inside_job = true;
        run_range(job_, 0);
        for (std::size_t r = claim_next(); r != 0; r = claim_next()) run_range(job_, r);
        inside_job = false;
        poll([&] { return running_.load(std::memory_order_acquire) == 0; });
        std::unique_lock<std::mutex> lock(mutex_);
        done_.wait(lock, [&] { return running_ == 0; });
        for (const std::exception_ptr& e : errors) {
            if (e) std::rethrow_exception(e);
        }
    }

private:
    struct Job {
        const std::function<void(std::size_t, std::size_t)>* body = nullptr;
        std::size_t units = 0;
        std::size_t ranges = 0;
        std::vector<std::exception_ptr>* errors = nullptr;
    };

    // The caller's claim on the first range no thread has taken yet; 0 when there is none.
    std::size_t claim_next() {
        std::lock_guard<std::mutex> lock(mutex_);
        for (std::size_t r = 1; r < claimed_.size(); ++r) {
            if (!claimed_[r]) {
                claimed_[r] = true;
                return r;
            }
        }
        return 0;
    }

    static void run_range(const Job& job, std::size_t r) {
        try {
            (*job.body)(job.units * r / job.ranges, job.units * (r + 1) / job.ranges);
        } catch (...) {
            (*job.errors)[r] = std::current_exception();
        }
    }

    void grow(std::size_t wanted) {
        while (workers_.size() < wanted) {
            const std::size_t range = workers_.size() + 1;
            std::unique_lock<std::mutex> lock(mutex_);
            const std::size_t seen = generation_;
            lock.unlock();
            workers_.emplace_back([this, range, seen] { work(range, seen); });
        }
    }

    // Worker for range `range`: waits for each new job and runs its range if it has one
    // that the caller has not claimed.
    void work(std::size_t range, std::size_t seen) {
        inside_job = true;
        std::unique_lock<std::mutex> lock(mutex_);
        for (;;) {
            lock.unlock();
            poll([&] { return generation_.load(std::memory_order_acquire) != seen; });
            lock.lock();
            wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
            if (stopping_) return;
            seen = generation_;
            if (range >= job_.ranges || claimed_[range]) continue;  // a late wake: taken
            claimed_[range] = true;
            ++running_;
            const Job job = job_;
            lock.unlock();
            run_range(job, range);
            lock.lock();
            if (--running_ == 0) done_.notify_one();
        }
    }

    std::mutex caller_;  // one job at a time
    std::mutex mutex_;   // guards everything below
    std::condition_variable wake_, done_;
    std::vector<std::thread> workers_;
    Job job_;
    std::vector<bool> claimed_;               // per range of job_: a thread has taken it
    std::atomic<std::size_t> generation_{0};  // changed under mutex_, polled without it
    std::atomic<std::size_t> running_{0};     // ranges workers took and have not finished
    bool stopping_ = false;
};

WorkerPool& pool() {
    static WorkerPool instance;
    return instance;
}

}  // namespace

std::size_t threads_for(std::uint64_t macs, std::size_t threads) {
    return std::max<std::uint64_t>(1, std::min<std::uint64_t>(threads, macs / min_shared_macs));
}

std::size_t hardware_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

void parallel_for(std::size_t units, std::size_t threads,
                  const std::function<void(std::size_t, std::size_t)>& body) {
    const std::size_t ranges = std::max<std::size_t>(1, std::min(threads, units));
    if (ranges == 1 || inside_job) {
        body(0, units);
        return;
    }
    pool().run(units, ranges, body);
}

}  // namespace mha
