// Tests for the training display's driver: the live panel only on a terminal without
// NO_COLOR, one plain line per evaluation otherwise, and the live panel's redraws in place
// between the alternate screen's entry and exit.

#include <catch2/catch.hpp>
#include <sstream>
#include <string>

#include "app/train/train_screen.h"

namespace test_train_screen {

using namespace mha;

namespace {

TrainSnapshot after(std::size_t evaluations, std::size_t step) {
    TrainSnapshot s;
    s.steps = 100;
    s.step = step;
    for (std::size_t i = 0; i < step; ++i) s.step_losses.push_back(3.0);
    for (std::size_t e = 1; e <= evaluations; ++e) {
        TrainEvaluation evaluation;
        evaluation.step = 10 * e;
        evaluation.loss = 3.0;
        evaluation.val_loss = 3.1;
        evaluation.prev_token = {{0.2, 0.4}};
        evaluation.induction = {{0.0, 0.0}};
        s.history.push_back(evaluation);
    }
    return s;
}

std::size_t count_of(const std::string& text, const std::string& what) {
    std::size_t count = 0;
    for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
        ++count;
    return count;
}

}  // namespace

TEST_CASE("the live panel on a terminal whose NO_COLOR is unset or empty, else plain lines") {
    CHECK(wants_live_panel(true, nullptr));
    CHECK(wants_live_panel(true, ""));
    CHECK_FALSE(wants_live_panel(true, "1"));
    CHECK_FALSE(wants_live_panel(false, nullptr));
}

TEST_CASE("without a terminal: one plain progress line per evaluation") {
    std::ostringstream out;
    {
        TrainScreen screen(out, false);
        CHECK_FALSE(screen.due(0));
        screen.show(after(0, 5));
        screen.show(after(1, 10));
        screen.show(after(1, 15));
        CHECK_FALSE(screen.due(1));
        CHECK(screen.due(2));
        screen.show(after(2, 20));
    }
    CHECK(out.str() ==
          train_progress_line(after(1, 10)) + "\n" + train_progress_line(after(2, 20)) + "\n");
}

TEST_CASE("on a terminal: the alternate screen, redraws in place, the screen restored") {
    std::ostringstream out;
    {
        TrainScreen screen(out, true);
        CHECK(screen.due(0));
        screen.show(after(1, 10));
        CHECK_FALSE(screen.due(1));  // drawn less than 0.1 s ago, and no new evaluation
        CHECK(screen.due(2));
        screen.show(after(1, 12));   // skipped
        screen.show(after(2, 100));  // a new evaluation, and the last step
    }
    const std::string text = out.str();
    const std::string enter = "\x1b[?1049h\x1b[?25l", leave = "\x1b[?25h\x1b[?1049l";
    CHECK(text.rfind(enter, 0) == 0);
    CHECK(count_of(text, "\x1b[H") == 2);   // two frames, each from the top left
    CHECK(count_of(text, "\x1b[2J") == 0);  // never a full-screen clear
    CHECK(count_of(text, "step 12 of") == 0);
    const std::size_t left = text.find(leave);
    REQUIRE(left != std::string::npos);
    // the last panel once more, on the normal screen, with plain newlines
    const std::string kept = text.substr(left + leave.size());
    CHECK(kept.find("step 100 of 100") != std::string::npos);
    CHECK(kept.find("\x1b[H") == std::string::npos);
    CHECK(kept.back() == '\n');
}

}  // namespace test_train_screen
