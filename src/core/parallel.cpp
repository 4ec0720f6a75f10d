// parallel_for on std::thread with static partitioning.

#include "core/parallel.h"

#include <algorithm>
#include <exception>
#include <thread>
#include <vector>

namespace mha {

std::size_t hardware_threads() {
    return std::max(1u, std::thread::hardware_concurrency());
}

void parallel_for(std::size_t units, std::size_t threads,
                  const std::function<void(std::size_t, std::size_t)>& body) {
    const std::size_t workers = std::max<std::size_t>(1, std::min(threads, units));
    if (workers == 1) {
        body(0, units);
        return;
    }
    std::vector<std::exception_ptr> errors(workers);
    auto run = [&](std::size_t w) {
        try {
            body(units * w / workers, units * (w + 1) / workers);
        } catch (...) {
            errors[w] = std::current_exception();
        }
    };
    std::vector<std::thread> pool;
    for (std::size_t w = 1; w < workers; ++w) pool.emplace_back(run, w);
    run(0);
    for (std::thread& t : pool) t.join();
    for (const std::exception_ptr& e : errors) {
        if (e) std::rethrow_exception(e);
    }
}

}  // namespace mha
