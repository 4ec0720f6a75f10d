// The persistent worker pool behind parallel_for: the same workers serve every
// call, the ranges are static, a call from inside a range runs serially, and
// callers on different threads take turns.

#include <algorithm>
#include <catch2/catch.hpp>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "core/kernels/parallel.h"

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
    const std::set<std::thread::id> first = ids_of_call(4);
    CHECK(first.size() == 4);
    CHECK(first.count(std::this_thread::get_id()) == 1);  // the caller runs range 0
    for (int call = 0; call < 20; ++call) CHECK(ids_of_call(4) == first);
    const std::set<std::thread::id> fewer = ids_of_call(2);
    CHECK(std::includes(first.begin(), first.end(), fewer.begin(), fewer.end()));
}

TEST_CASE("parallel_for gives each thread the same range on every call") {
    std::vector<std::thread::id> owner(10), again(10);
    for (std::vector<std::thread::id>* record : {&owner, &again}) {
        mha::parallel_for(10, 3, [&](std::size_t begin, std::size_t end) {
            for (std::size_t u = begin; u < end; ++u) (*record)[u] = std::this_thread::get_id();
        });
    }
    CHECK(owner == again);
    // 10 units over 3 threads: [0, 3), [3, 6), [6, 10)
    CHECK(owner[0] == owner[2]);
    CHECK(owner[2] != owner[3]);
    CHECK(owner[5] != owner[6]);
    CHECK(owner[6] == owner[9]);
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
