// The time guard: the estimate, the refusal and the progress line.

#include "app/run/time_guard.h"

#include <chrono>
#include <cmath>
#include <ostream>

#include "core/error.h"
#include "show/format.h"

namespace mha {

double macs_per_thread_second(Form form, AttentionPath path) {
    if (form == Form::Mla) return 4e9;
    if (form == Form::Decode) return 1e9;
    if (form == Form::PerHead || path == AttentionPath::Standard) return 4e9;
    return 15e9;
}

double estimated_seconds(std::uint64_t macs, std::size_t threads, double rate) {
    return double(macs) / (rate * double(threads == 0 ? 1 : threads));
}

std::string duration_words(double seconds) {
    if (seconds < 1) return fixed(seconds * 1000, 1) + " ms";
    if (seconds < 100) return fixed(std::ceil(seconds), 0) + " s";
    if (seconds < 6000) return fixed(std::round(seconds / 60), 0) + " min";
    if (seconds < 3.6e5) return fixed(seconds / 3600, 1) + " hours";
    return with_commas(std::uint64_t(seconds / 86400)) + " days";
}

void check_time(std::uint64_t macs, std::size_t threads, double rate,
                const std::optional<double>& max_time, const char* instead) {
    const double seconds = estimated_seconds(macs, threads, rate);
    if (!max_time || seconds <= *max_time) return;
    throw Error("this run needs " + with_commas(macs) + " multiply-adds, about " +
                duration_words(seconds) + " on " + std::to_string(threads) +
                (threads == 1 ? " thread" : " threads") + ", over --max-time " +
                compact(*max_time) + " s" + "; " + instead +
                ", and --max-time off (or a larger --max-time) runs it");
}

Progress::Progress(double estimate, std::ostream& out, bool show) : estimate_(estimate), out_(out) {
    if (show && estimate >= min_seconds) thread_ = std::thread([this] { run(); });
}

Progress::~Progress() { stop(); }

void Progress::stop() {
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        done_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
}

void Progress::run() {
    const auto start = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> lock(mutex_);
    bool shown = false;
    while (!wake_.wait_for(lock, std::chrono::milliseconds(500), [this] { return done_; })) {
        const double elapsed =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const std::string so_far =
            elapsed < 100 ? fixed(std::floor(elapsed), 0) + " s" : duration_words(elapsed);
        out_ << "\rmha: computing, " << so_far << " of about " << duration_words(estimate_)
             << "\x1b[K" << std::flush;
        shown = true;
    }
    if (shown) out_ << "\r\x1b[K" << std::flush;
}

}  // namespace mha
