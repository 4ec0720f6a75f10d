// The time guard: the estimate from multiply-adds, the refusal and its way out, the progress line.

#include <catch2/catch.hpp>

#include <chrono>
#include <sstream>
#include <thread>

#include "app/run/time_guard.h"
#include "core/error.h"
#include "helpers.h"

namespace test_time_guard {

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
    // MLA runs the shared kernels on both paths, at about the standard path's rate
    CHECK(mha::macs_per_thread_second(Form::Mla, AttentionPath::Streaming) <
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
    CHECK_THAT(
        shown.str(),
        Catch::StartsWith("\rmha: computing, 0 s of about 40 s\x1b[K\rmha: computing, 1 s of"));
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

TEST_CASE("the time guard covers --form mla and --model runs", "[cli]") {
    // --form mla, B=1 N=3 d_model=16 h=2, d_h = d_v = 8, d_c 8, d_R 4, q and k d_k = 12:
    //   Q 3·2·12·16 = 1,152   kv_a 3·12·16 = 576   kv 3·2·16·8 = 768
    //   naive, steps 6-14: scores 2·3·3·12 = 216, context 2·3·3·8 = 144, W_o 3·16·16 = 768
    //   absorbed: q_nope W_UK 2·3·8·8 = 384, scores 216, context 2·3·3·8 = 144,
    //   folded W_o 3·16·16 = 768, folding W_UV into it 16·2·8·8 = 2,048
    // 7,184 in all, on the standard path and the streaming one; split over -t 2 threads
    const std::string mla = "--form mla -b 1 -n 3 -d 16 -H 2 --latent-dim 8 --rope-dim 4 -t 2";
    CHECK_THAT(test::run_mha(mla + " --shapes-only --format markdown").output,
               Catch::Contains(" B copied, 7,184 multiply-adds."));
    const test::RunResult refused = test::run_mha(mla + " --max-time 0.0000001");
    CHECK(refused.status == 2);
    CHECK_THAT(refused.output,
               Catch::StartsWith("mha: error: this run needs 7,184 multiply-adds") &&
                   Catch::Contains(" on 2 threads, over --max-time 1e-07 s; --shapes-only"));
    CHECK(test::run_mha(mla + " --max-time 0.0000001 --max-time off").status == 0);

    // kjv-2x4 on "Amen": N=4, d_model 64, 2 layers of 4 heads, d_ff 256, V=63.
    // Each layer: 4·4·64² + 2·4·4·4·16 = 67,584 (attention) + 2·4·64·256 = 131,072 (MLP);
    // the head 4·63·64 = 16,128: 2·198,656 + 16,128 = 413,440
    const std::string model = "--model ../examples/models/kjv-2x4.npz --text Amen";
    const test::RunResult slow = test::run_mha(model + " --max-time 0.0000001");
    CHECK(slow.status == 2);
    CHECK_THAT(slow.output,
               Catch::StartsWith("mha: error: this run needs 413,440 multiply-adds") &&
                   Catch::Contains("; a shorter --text costs less, and --max-time off"));
    CHECK(test::run_mha(model + " --max-time 0.0000001 --max-time off").status == 0);
    CHECK(test::run_mha(model).status == 0);  // well within the default 60 s
}

}  // namespace test_time_guard
