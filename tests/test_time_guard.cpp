// The time guard: the estimate from multiply-adds, the refusal and its way out, the progress line.

#include <catch2/catch.hpp>

#include <chrono>
#include <sstream>
#include <thread>

#include "app/time_guard.h"
#include "core/error.h"
#include "helpers.h"

TEST_CASE("the estimate is the multiply-adds over the rate times the threads") {
    // 3e9 multiply-adds at 1.5e9 per thread-second: 2 s on one thread, 1 s on two
    CHECK(mha::estimated_seconds(3'000'000'000, 1, 1.5e9) == Approx(2.0));
    CHECK(mha::estimated_seconds(3'000'000'000, 2, 1.5e9) == Approx(1.0));
    // the slower forms and paths get the lower rates
    using mha::AttentionPath, mha::Form;
    CHECK(mha::macs_per_thread_second(Form::Decode, AttentionPath::Standard) <
          mha::macs_per_thread_second(Form::PerHead, AttentionPath::Streaming));
    CHECK(mha::macs_per_thread_second(Form::Packed, AttentionPath::Standard) <
          mha::macs_per_thread_second(Form::Packed, AttentionPath::Streaming));
    CHECK(mha::duration_words(0.00028) == "0.3 ms");
    CHECK(mha::duration_words(1.2) == "2 s");
    CHECK(mha::duration_words(99) == "99 s");
    CHECK(mha::duration_words(840) == "14 min");
    CHECK(mha::duration_words(6861) == "1.9 hours");
    CHECK(mha::duration_words(864000) == "10 days");
}

TEST_CASE("a run over --max-time is refused with the estimate; --max-time off lifts it") {
    // 2·1.5e9·60 multiply-adds take 60 s on 2 threads: at the limit, not over it
    CHECK_NOTHROW(mha::check_time(180'000'000'000, 2, 1.5e9, 60.0));
    REQUIRE_THROWS_WITH(mha::check_time(180'000'000'001, 1, 1.5e9, 60.0),
                        Catch::StartsWith("this run needs 180,000,000,001 multiply-adds, about 2 "
                                          "min on 1 thread, over --max-time 60 s; --shapes-only"));
    CHECK_NOTHROW(mha::check_time(std::uint64_t(1) << 60, 1, 1.5e9, std::nullopt));
}

TEST_CASE("the time guard on the command line", "[cli]") {
    // B=2, N=100000, d_model 256: 4·B·N·d² + 2·B·N²·d = 52,428,800,000 + 10,240,000,000,000
    const test::RunResult refused = test::run_mha("-n 100000 -t 1");
    CHECK(refused.status == 2);
    CHECK_THAT(refused.output, Catch::Contains("this run needs 10,292,428,800,000 multiply-adds"));
    const test::RunResult shapes = test::run_mha("-n 100000 -t 1 --shapes-only");
    CHECK(shapes.status == 0);
    CHECK_THAT(shapes.output, Catch::Contains("10,292,428,800,000 multiply-adds"));
    // the default run: 4,259,840 multiply-adds, about 0.3 ms on the streaming path
    CHECK(test::run_mha("-t 1 --max-time 0.0001").status == 2);
    CHECK(test::run_mha("-t 1 --max-time 0.001").status == 0);
    CHECK(test::run_mha("-t 1 --max-time 0.0001 --max-time off").status == 0);
}

TEST_CASE("the progress line shows for long estimates only, and is erased at the end") {
    std::ostringstream shown, short_run, not_a_terminal;
    {
        mha::Progress progress(40.0, shown, true);
        std::this_thread::sleep_for(std::chrono::milliseconds(1200));
    }
    CHECK_THAT(shown.str(), Catch::StartsWith("\rmha: computing, 0 s of about 40 s\x1b[K\rmha: computing, 1 s of"));
    CHECK_THAT(shown.str(), Catch::EndsWith("\r\x1b[K"));
    {
        mha::Progress progress(mha::Progress::min_seconds / 2, short_run, true);
        std::this_thread::sleep_for(std::chrono::milliseconds(600));
        progress.stop();
    }
    {
        mha::Progress progress(40.0, not_a_terminal, false);
        std::this_thread::sleep_for(std::chrono::milliseconds(600));
    }
    CHECK(short_run.str().empty());
    CHECK(not_a_terminal.str().empty());
}
