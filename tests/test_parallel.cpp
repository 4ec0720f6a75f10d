// The persistent worker pool behind parallel_for, parallel_ranges and parallel_each: the same
// workers serve every call, the ranges are static (each run by whichever thread claims it first,
// the caller's first being range 0), a call from inside a range runs serially, and callers on
// different threads take turns.

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "core/threads/parallel.h"

namespace test_parallel {

namespace {

// The thread ids that ran the ranges of one call with `threads` threads.
std::set<std::thread::id> ids_of_call(std::size_t threads) {
    std::set<std::thread::id> ids;
    std::mutex lock;
    mha::parallel_for(threads, threads, [&](std::size_t, std::size_t) {
        std::lock_guard<std::mutex> guard(lock);
        ids.insert(std::this_thread::get_id());
    });
    return ids;
}

}  // namespace

TEST_CASE("parallel_for reuses the same worker threads call after call") {
    // the caller runs range 0 and any range no worker has claimed, so a call may see fewer
    // threads, never new ones: after the first call the process has as many threads as before
    // (Linux lists them in /proc/self/task)
    const auto process_threads = [] {
        std::size_t count = 0;
        for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
            static_cast<void>(entry);
            ++count;
        }
        return count;
    };
    CHECK(ids_of_call(4).count(std::this_thread::get_id()) == 1);
    const std::size_t before = process_threads();
    for (int call = 0; call < 20; ++call) {
        CHECK(ids_of_call(4).count(std::this_thread::get_id()) == 1);
        CHECK(ids_of_call(2).size() <= 2);
    }
    CHECK(process_threads() == before);
}

TEST_CASE("parallel_for runs every range once, each on one thread, split the same way") {
    for (int call = 0; call < 20; ++call) {
        std::vector<std::thread::id> owner(10);
        std::vector<int> runs(10, 0);
        std::vector<std::pair<std::size_t, std::size_t>> ranges;
        std::mutex lock;
        mha::parallel_for(10, 3, [&](std::size_t begin, std::size_t end) {
            for (std::size_t u = begin; u < end; ++u) {
                owner[u] = std::this_thread::get_id();
                ++runs[u];
            }
            std::lock_guard<std::mutex> guard(lock);
            ranges.emplace_back(begin, end);
        });
        CHECK(runs == std::vector<int>(10, 1));
        std::sort(ranges.begin(), ranges.end());
        // 10 units over 3 threads: [0, 3), [3, 6), [6, 10), whoever runs them
        const std::vector<std::pair<std::size_t, std::size_t>> expected = {{0, 3}, {3, 6}, {6, 10}};
        CHECK(ranges == expected);
        CHECK(owner[0] == owner[2]);
        CHECK(owner[0] == std::this_thread::get_id());  // range 0 is the caller's
        CHECK(owner[3] == owner[5]);
        CHECK(owner[6] == owner[9]);
    }
}

TEST_CASE("parallel_ranges: more ranges than threads, each run once, split by units and ranges") {
    for (const std::size_t threads : {1, 2, 3}) {
        CAPTURE(threads);
        for (int call = 0; call < 20; ++call) {
            std::vector<int> runs(10, 0);
            std::set<std::thread::id> ids;
            std::vector<std::pair<std::size_t, std::size_t>> ranges;
            std::mutex lock;
            mha::parallel_ranges(10, 4, threads, [&](std::size_t begin, std::size_t end) {
                std::lock_guard<std::mutex> guard(lock);
                for (std::size_t u = begin; u < end; ++u) ++runs[u];
                ids.insert(std::this_thread::get_id());
                ranges.emplace_back(begin, end);
            });
            CHECK(runs == std::vector<int>(10, 1));
            CHECK(ids.size() <= threads);
            std::sort(ranges.begin(), ranges.end());
            // 10 units in 4 ranges, whatever the threads: [0, 2), [2, 5), [5, 7), [7, 10); on
            // one thread a single call over all of them
            const std::vector<std::pair<std::size_t, std::size_t>> four = {
                {0, 2}, {2, 5}, {5, 7}, {7, 10}};
            const std::vector<std::pair<std::size_t, std::size_t>> whole = {{0, 10}};
            CHECK(ranges == (threads == 1 ? whole : four));
        }
    }
    // no more ranges than units: 3 units asked for in 8 ranges run as 3
    std::vector<std::pair<std::size_t, std::size_t>> ranges;
    std::mutex lock;
    mha::parallel_ranges(3, 8, 2, [&](std::size_t begin, std::size_t end) {
        std::lock_guard<std::mutex> guard(lock);
        ranges.emplace_back(begin, end);
    });
    std::sort(ranges.begin(), ranges.end());
    const std::vector<std::pair<std::size_t, std::size_t>> each = {{0, 1}, {1, 2}, {2, 3}};
    CHECK(ranges == each);
}

TEST_CASE("parallel_for: the caller runs a range whose worker has not started") {
    // After 1 ms without work the workers sleep on their condition variable (3 ms here), and
    // waking one takes tens of microseconds; the caller's range 0 here takes none, so the
    // caller often finds range 1 unclaimed and runs it itself (it would otherwise wait for a
    // worker). Two hundred tries: at least one must go that way. (When a call woke every
    // sleeping worker, not one per range, one of the earlier tests' workers won range 1 in
    // every try of some ThreadSanitizer runs.)
    int taken_by_caller = 0;
    for (int call = 0; call < 200; ++call) {
        std::this_thread::sleep_for(std::chrono::milliseconds(3));
        std::thread::id owner;
        mha::parallel_for(2, 2, [&](std::size_t begin, std::size_t) {
            if (begin == 1) owner = std::this_thread::get_id();
        });
        taken_by_caller += owner == std::this_thread::get_id();
    }
    CHECK(taken_by_caller > 0);
}

TEST_CASE("parallel_for inside a range runs serially on that thread") {
    std::vector<int> seen(6 * 5, 0);
    std::vector<int> elsewhere(6, 0);  // inner ranges run on another thread (Catch2 checks
                                       // only on the test's own thread)
    mha::parallel_for(6, 3, [&](std::size_t begin, std::size_t end) {
        for (std::size_t outer = begin; outer < end; ++outer) {
            const std::thread::id me = std::this_thread::get_id();
            mha::parallel_for(5, 4, [&](std::size_t b, std::size_t e) {
                if (std::this_thread::get_id() != me) ++elsewhere[outer];
                for (std::size_t u = b; u < e; ++u) ++seen[outer * 5 + u];
            });
        }
    });
    CHECK(seen == std::vector<int>(30, 1));
    CHECK(elsewhere == std::vector<int>(6, 0));
}

TEST_CASE("parallel_for callers on different threads take turns") {
    std::vector<std::vector<int>> seen(4, std::vector<int>(100, 0));
    std::vector<std::thread> callers;
    for (std::size_t c = 0; c < seen.size(); ++c) {
        callers.emplace_back([&seen, c] {
            for (int round = 0; round < 10; ++round) {
                mha::parallel_for(100, 3, [&](std::size_t begin, std::size_t end) {
                    for (std::size_t u = begin; u < end; ++u) ++seen[c][u];
                });
            }
        });
    }
    for (std::thread& t : callers) t.join();
    for (const std::vector<int>& s : seen) CHECK(s == std::vector<int>(100, 10));
}

TEST_CASE("parallel_each runs every unit once, on at most its threads, one slot a thread") {
    for (const std::size_t threads : {1, 2, 3}) {
        CAPTURE(threads);
        for (int call = 0; call < 20; ++call) {
            std::vector<int> runs(8, 0);
            std::set<std::thread::id> ids;
            std::vector<std::set<std::thread::id>> slot_ids(8);
            std::vector<std::atomic<bool>> busy(8);
            std::atomic<int> shared{0};  // units that found their slot in use
            std::mutex lock;
            mha::parallel_each(8, threads, [&](std::size_t unit, std::size_t slot) {
                if (slot >= std::min<std::size_t>(threads, 8) || busy[slot].exchange(true)) {
                    ++shared;
                    return;
                }
                {
                    std::lock_guard<std::mutex> guard(lock);
                    ++runs[unit];
                    ids.insert(std::this_thread::get_id());
                    slot_ids[slot].insert(std::this_thread::get_id());
                }
                std::this_thread::sleep_for(std::chrono::microseconds(200));
                busy[slot] = false;
            });
            CHECK(shared == 0);
            CHECK(runs == std::vector<int>(8, 1));
            CHECK(ids.size() <= threads);
            for (const auto& owners : slot_ids) CHECK(owners.size() <= 1);  // a slot, a thread
        }
    }
    int calls = 0;
    mha::parallel_each(0, 2, [&](std::size_t, std::size_t) { ++calls; });
    CHECK(calls == 0);
    // inside a running range, serially on that thread, in slot 0
    std::vector<int> elsewhere(4, 0), other_slot(4, 0);
    mha::parallel_each(4, 2, [&](std::size_t outer, std::size_t) {
        const std::thread::id me = std::this_thread::get_id();
        mha::parallel_each(3, 2, [&](std::size_t, std::size_t slot) {
            if (std::this_thread::get_id() != me) ++elsewhere[outer];
            if (slot != 0) ++other_slot[outer];
        });
    });
    CHECK(elsewhere == std::vector<int>(4, 0));
    CHECK(other_slot == std::vector<int>(4, 0));
}

TEST_CASE("threads_for: at most one per min_shared_macs, and one inside a running range") {
    CHECK(mha::threads_for(0, 4) == 1);
    CHECK(mha::threads_for(3 * mha::min_shared_macs, 4) == 3);
    CHECK(mha::threads_for(100 * mha::min_shared_macs, 4) == 4);
    std::vector<std::size_t> nested(2, 0);
    mha::parallel_for(2, 2, [&](std::size_t begin, std::size_t end) {
        for (std::size_t u = begin; u < end; ++u)
            nested[u] = mha::threads_for(100 * mha::min_shared_macs, 4);
    });
    CHECK(nested == std::vector<std::size_t>(2, 1));
    CHECK(mha::threads_for(100 * mha::min_shared_macs, 4) == 4);  // outside again
}

}  // namespace test_parallel
