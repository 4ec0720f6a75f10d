#pragma once
// The time guard: a run's time estimated from its multiply-adds before it starts, the
// refusal above --max-time, and a progress line on a terminal while a long run computes.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <iosfwd>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "core/pass/form.h"

namespace mha {

// Multiply-adds per second that one thread sustains on this form and path: about half of
// what we measured on a shared 2-core machine (MLA 9e9 both paths, decode 1.7e9, per-head 5.9e9,
// standard 8.3e9, streaming 25e9 to 35e9), so that an estimate errs towards too long.
// A --model run is the standard path, layer after layer.
double macs_per_thread_second(Form form, AttentionPath path);

// Seconds for `macs` multiply-adds on `threads` threads at `rate` per thread.
double estimated_seconds(std::uint64_t macs, std::size_t threads, double rate);

// "0.3 ms", "45 s", "14 min", "2.9 hours".
std::string duration_words(double seconds);

// The other way out check_time names by default.
inline constexpr const char* shapes_only_instead =
    "--shapes-only traces its shapes and costs without computing";

// Throws mha::Error when the estimate exceeds max_time (unset: no limit), naming the
// multiply-adds, the estimate, `instead` (a cheaper way to the answer) and how to lift the limit.
void check_time(std::uint64_t macs, std::size_t threads, double rate,
                const std::optional<double>& max_time, const char* instead = shapes_only_instead);

// While alive, and only when `show` and the estimate is at least min_seconds: a line on
// `out` updated twice a second, "mha: computing, 12 s of about 40 s", erased by stop().
class Progress {
public:
    static constexpr double min_seconds = 2.0;
    Progress(double estimate, std::ostream& out, bool show);
    ~Progress();
    Progress(const Progress&) = delete;
    Progress& operator=(const Progress&) = delete;
    void stop();

private:
    void run();
    double estimate_;
    std::ostream& out_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool done_ = false;
    std::thread thread_;
};

}  // namespace mha
