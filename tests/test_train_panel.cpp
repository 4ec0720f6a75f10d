// Tests for the training panel, the plain progress line and the --log line: the moment
// induction heads formed on hand-made histories, the sparkline's levels, the head bars, the
// mini heatmaps on a hand-made probe, every line within the width and the height it was
// given, and the log's JSON.

#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "show/text_layout.h"
#include "show/train_log.h"
#include "show/train_panel.h"

namespace test_train_panel {

using namespace mha;

namespace {

// An evaluation of a 2-layer, 4-head model: head 1 of layer 0 at `previous`, head 2 of
// layer 1 at `induction`, every other head at 0.01.
TrainEvaluation evaluation(std::size_t step, double loss, double previous, double induction) {
    TrainEvaluation e;
    e.step = step;
    e.seconds = double(step) / 10.0;
    e.loss = loss;
    e.val_loss = loss + 0.05;
    e.prev_token = {{0.01, previous, 0.01, 0.01}, {0.01, 0.01, 0.01, 0.01}};
    e.induction = {{0.01, 0.01, 0.01, 0.01}, {0.01, 0.01, induction, 0.01}};
    return e;
}

// Best induction 0.02, 0.05, 0.08, 0.15, 0.25, 0.45, 0.70 at steps 10..70: the rise begins
// after step 30 (0.08 < 0.1), the heads have formed at step 60 (0.45 >= 0.3).
std::vector<TrainEvaluation> rising_history() {
    const double induction[] = {0.02, 0.05, 0.08, 0.15, 0.25, 0.45, 0.70};
    const double loss[] = {3.1, 2.6, 2.3, 2.2, 2.05, 1.7, 1.5};
    std::vector<TrainEvaluation> history;
    for (std::size_t i = 0; i < 7; ++i)
        history.push_back(evaluation(10 * (i + 1), loss[i], 0.1 * double(i + 1), induction[i]));
    return history;
}

// The probe: by default a 24-letter segment written twice (N = 48). Layer 0 head 1 puts all
// its weight on the previous character; layer 1 head 2, from the repeat on, on the character
// after the earlier copy (key i - repeat + 1); every other head spreads evenly over keys 0..i.
const std::string segment = "qwhzkbfmtyrcxjdvlnpgsuoa";

TrainSnapshot snapshot(std::vector<TrainEvaluation> history,
                       const std::string& probe = segment + segment,
                       std::size_t repeat = segment.size()) {
    TrainSnapshot s;
    s.steps = 200;
    s.step = history.empty() ? 0 : history.back().step;
    s.seconds = double(s.step) / 10.0;
    s.eta_seconds = double(s.steps - s.step) / 10.0;
    for (std::size_t i = 0; i < s.step; ++i) s.step_losses.push_back(3.5 - 2.0 * double(i) / 70);
    s.history = std::move(history);
    s.probe = probe;
    for (char c : s.probe) s.probe_characters.emplace_back(1, c);
    const std::size_t n = s.probe.size(), heads = 4;
    for (std::size_t layer = 0; layer < 2; ++layer) {
        std::vector<float> w(heads * n * n, 0.0f);  // (1, h, N, N)
        for (std::size_t h = 0; h < heads; ++h) {
            for (std::size_t i = 0; i < n; ++i) {
                float* row = &w[(h * n + i) * n];
                if (layer == 0 && h == 1) {
                    row[i == 0 ? 0 : i - 1] = 1.0f;
                } else if (layer == 1 && h == 2 && i >= repeat) {
                    row[i - repeat + 1] = 1.0f;
                } else {
                    for (std::size_t j = 0; j <= i; ++j) row[j] = 1.0f / float(i + 1);
                }
            }
        }
        s.probe_weights.emplace_back(Shape{1, heads, n, n}, std::move(w));
    }
    return s;
}

// The index of the first line that starts with `start`, or lines.size().
std::size_t line_starting(const std::vector<std::string>& lines, const std::string& start) {
    std::size_t at = 0;
    while (at < lines.size() && lines[at].rfind(start, 0) != 0) ++at;
    return at;
}

bool has_line_starting(const std::vector<std::string>& lines, const std::string& start) {
    for (const std::string& line : lines) {
        if (line.rfind(start, 0) == 0) return true;
    }
    return false;
}

// What a line shows from display column `column` on (UTF-8, no escape sequences).
std::string from_column(const std::string& line, std::size_t column) {
    std::size_t at = 0;
    for (std::size_t seen = 0; at < line.size(); ++at) {
        const bool starts = (static_cast<unsigned char>(line[at]) & 0xC0) != 0x80;
        if (starts && seen++ == column) break;
    }
    return line.substr(at);
}

}  // namespace

TEST_CASE("induction heads form at the first evaluation whose best score reaches 0.3") {
    const std::optional<InductionFormed> formed = induction_formed(rising_history());
    REQUIRE(formed);
    CHECK(formed->step == 60);
    CHECK(formed->loss_before == 2.3);  // step 30, the last below 0.1 before the rise
    CHECK(formed->loss_after == 1.7);
}

TEST_CASE("induction heads have not formed below 0.3, nor in layer 0, nor on NaN") {
    std::vector<TrainEvaluation> history = rising_history();
    history.resize(5);  // best 0.25
    CHECK_FALSE(induction_formed(history));
    CHECK_FALSE(induction_formed({}));
    TrainEvaluation first_layer = evaluation(10, 3.0, 0.2, 0.0);
    first_layer.induction[0][3] = 0.9;  // layer 0 cannot copy by induction: not counted
    CHECK_FALSE(induction_formed({first_layer}));
    TrainEvaluation undefined = evaluation(10, 3.0, 0.2, NAN);
    CHECK_FALSE(induction_formed({undefined}));
    TrainEvaluation one_layer = evaluation(10, 3.0, 0.2, 0.9);
    one_layer.prev_token.resize(1);
    one_layer.induction.resize(1);
    CHECK_FALSE(induction_formed({one_layer}));
}

TEST_CASE("formed at once, or without an evaluation below 0.1, the loss before is the first's") {
    CHECK(induction_formed({evaluation(10, 3.0, 0.2, 0.5)})->loss_before == 3.0);
    const std::optional<InductionFormed> formed =
        induction_formed({evaluation(10, 3.0, 0.2, 0.12), evaluation(20, 2.5, 0.2, 0.2),
                          evaluation(30, 2.0, 0.2, 0.31), evaluation(40, 1.0, 0.2, 0.9)});
    REQUIRE(formed);
    CHECK(formed->step == 30);
    CHECK(formed->loss_before == 3.0);
    CHECK(formed->loss_after == 2.0);
}

TEST_CASE("the evaluation before the first step has no training loss: it is not the one before") {
    TrainEvaluation start = evaluation(0, NAN, 0.0, 0.0);
    const std::optional<InductionFormed> formed =
        induction_formed({start, evaluation(10, 3.0, 0.2, 0.05), evaluation(20, 2.0, 0.2, 0.5)});
    REQUIRE(formed);
    CHECK(formed->loss_before == 3.0);
    CHECK(induction_formed({start, evaluation(10, 2.5, 0.2, 0.4)})->loss_before == 2.5);
    CHECK(train_progress_line(snapshot({start})) ==
          "step 0/200  0:00  loss -  held-out -  previous 0.01  induction 0.01");
    CHECK(train_panel(snapshot({start}), 80, 24, false)[1] == "training loss  -");
}

TEST_CASE("the panel's lines fit the width and the height it is given") {
    const TrainSnapshot s = snapshot(rising_history());
    const std::size_t width = GENERATE(24, 40, 79, 80, 81, 120, 200);
    const std::size_t height = GENERATE(0, 1, 5, 12, 23, 24, 40);
    const bool color = GENERATE(false, true);
    const std::vector<std::string> lines = train_panel(s, width, height, color);
    CAPTURE(width, height, color);
    CHECK(lines.size() <= height);
    for (const std::string& line : lines) {
        CAPTURE(line);
        CHECK(visible_width(line) <= width);
        if (!color) CHECK(line.find('\x1b') == std::string::npos);
    }
}

TEST_CASE("at 80 x 24 the panel draws everything; smaller, it drops the heatmaps") {
    const TrainSnapshot s = snapshot(rising_history());
    const std::vector<std::string> full = train_panel(s, 80, 24, false);
    CHECK(full.size() == 24);
    CHECK(full[0] == "mha train   step 70 of 200 (35%)   0:07 elapsed, about 0:13 to go");
    CHECK(has_line_starting(full, "induction heads formed at step 60: loss 2.30 → 1.70"));
    CHECK(has_line_starting(full, "L0 H1 previous 0.70, keys 12..47"));
    for (const std::string& line : full) CHECK(visible_width(line) <= 80);
    const std::vector<std::string> narrow = train_panel(s, 79, 24, false);
    const std::vector<std::string> short_one = train_panel(s, 80, 23, false);
    for (const std::vector<std::string>& lines : {narrow, short_one}) {
        CHECK(has_line_starting(lines, "induction heads formed at step 60"));
        CHECK_FALSE(has_line_starting(lines, "L0 H1 previous"));
    }
}

TEST_CASE("a panel cut short says how many lines it left out") {
    const std::vector<std::string> lines = train_panel(snapshot(rising_history()), 80, 6, false);
    REQUIRE(lines.size() == 6);
    CHECK(lines.back() == "… 6 more lines");  // 11 lines without heatmaps: 5 shown, 6 not
}

TEST_CASE("the loss sparkline: one column per share of the planned steps, on one scale") {
    TrainSnapshot s;
    s.steps = 8;
    s.step = 8;
    s.step_losses = {8, 7, 6, 5, 4, 3, 2, 1};
    // width 29 leaves 8 columns after the 21 of the labels: one step each, 1 (low) .. 8 (high)
    std::vector<std::string> lines = train_panel(s, 29, 24, true);
    REQUIRE(lines.size() >= 3);
    CHECK(lines[1] == "training loss  -     █▇▆▅▄▃▂▁");
    CHECK(lines[2] == "held-out loss  -");  // no evaluation yet
    lines = train_panel(s, 29, 24, false);
    CHECK(lines[1] == "training loss  -     @%#*=-:.");  // the plain ramp without its blank
    s.step = 4;
    s.step_losses.resize(4);  // half way: half the columns; the scale is 5..8
    s.history = {evaluation(2, 6.5, 0.1, 0.0), evaluation(4, 4.5, 0.1, 0.0)};
    s.history[0].val_loss = 8.0;
    s.history[1].val_loss = 5.0;
    lines = train_panel(s, 29, 24, true);
    CHECK(lines[1] == "training loss  4.500 █▆▃▁");
    CHECK(lines[2] == "held-out loss  5.000  ██▁");
}

TEST_CASE("every head's two scores as bars, in eighths of a column, layers side by side") {
    const std::vector<std::string> lines = train_panel(snapshot(rising_history()), 80, 24, true);
    // head 1 of layer 0 at 0.70: 7 full columns of 10; head 2 of layer 1 at 0.70 too
    CHECK(
        has_line_starting(lines, "L0 H0 ▏          0.01  ▏          0.01  L1 H0 ▏          0.01"));
    CHECK(has_line_starting(lines, "\x1b[1mL0 H1 \x1b[0m███████    0.70  ▏          0.01  L1 H1 "));
    CHECK(has_line_starting(lines,
                            "L0 H2 ▏          0.01  ▏          0.01  \x1b[1mL1 H2 \x1b[0m"
                            "▏          0.01  ███████    0.70"));
}

TEST_CASE("the mini heatmaps show the chosen heads on the probe's last queries") {
    const std::vector<std::string> lines = train_panel(snapshot(rising_history()), 80, 24, false);
    const std::size_t title = line_starting(lines, "L0 H1 previous 0.70, keys 12..47");
    REQUIRE(title + 12 == lines.size());  // title, keys, the last 10 queries
    CHECK(lines[title].find("L1 H2 induction 0.70, keys 12..47") == 38 + 3);
    // 38 columns each: the label, then the last 36 keys (12..47)
    CHECK(lines[title + 1].substr(0, 38) == "  " + segment.substr(12) + segment);
    // the last query, 'a' (47): key 46 ('o') in layer 0 head 1; key 24 ('q') in layer 1 head 2
    const std::string& last = lines.back();
    CHECK(last.substr(0, 2) == "a ");
    CHECK(last.substr(2, 36) == std::string(34, ' ') + "@ ");
    CHECK(last.substr(41 + 2) == std::string(12, ' ') + "@");  // trailing blanks dropped
    // the query before it, 'o' (46): key 47 is hidden by the causal mask
    CHECK(lines[lines.size() - 2].substr(2, 36) == std::string(33, ' ') + "@ /");
}

TEST_CASE("a head that looks back further than the map is wide is shown where it looks") {
    // mha train's probe: the copy starts 41 characters after the original, more than the 36
    // keys a map has room for at 80 columns
    const std::string probe =
        "The password is qxvbtmrkalzwpfjh. Again: the password is qxvbtmrkalzwpfjh.";
    const std::vector<std::string> lines =
        train_panel(snapshot(rising_history(), probe, 41), 80, 24, false);
    const std::size_t title = line_starting(lines, "L0 H1 previous 0.70, keys 38..73");
    REQUIRE(title + 12 == lines.size());
    // queries 64..73 look at keys 24..33: the rightmost 36 keys holding all of it start at 24
    CHECK(from_column(lines[title], 41) == "L1 H2 induction 0.70, keys 24..59");
    CHECK(from_column(lines[title + 1], 41) == "  alzwpfjh.␣Again:␣the␣password␣is␣qxv");
    CHECK(from_column(lines.back(), 41) == ". " + std::string(9, ' ') + "@");  // query 73: key 33
}

TEST_CASE("the plain progress line, and the formed line when this evaluation formed them") {
    std::vector<TrainEvaluation> history = rising_history();
    history.resize(6);
    CHECK(train_progress_line(snapshot(history)) ==
          "step 60/200  0:06  loss 1.700  held-out 1.750  previous 0.60  induction 0.45\n"
          "induction heads formed at step 60: loss 2.30 → 1.70");
    CHECK(train_progress_line(snapshot(rising_history())) ==
          "step 70/200  0:07  loss 1.500  held-out 1.550  previous 0.70  induction 0.70");
    CHECK(train_progress_line(snapshot({})) == "step 0/200  0:00");
}

TEST_CASE("visible_width skips escape sequences, cut_to_width keeps them and resets colour") {
    CHECK(visible_width("\x1b[1mab\x1b[0m█") == 3);
    CHECK(cut_to_width("\x1b[48;5;17m  \x1b[0mabc", 3) == "\x1b[48;5;17m  \x1b[0ma");
    CHECK(cut_to_width("\x1b[1mabcdef", 2) == "\x1b[1mab\x1b[0m");
    CHECK(cut_to_width("▁▂▃", 2) == "▁▂");
}

TEST_CASE("mha train --log: one JSON line per evaluation, null where there is no number",
          "[train]") {
    mha::TrainEvaluation e;
    e.step = 50;
    e.seconds = 3.96056;
    e.loss = NAN;  // step 0 has no training loss yet
    e.val_loss = 3.0772849;
    e.prev_token = {{0.25, 0.5}};
    e.induction = {{0.125, 1.0 / 3.0}};
    CHECK(mha::train_log_line(e) ==
          "{\"step\":50,\"seconds\":3.96056,\"loss\":null,\"val_loss\":3.07728,"
          "\"prev_token\":[[0.25,0.5]],\"induction\":[[0.125,0.333333]]}");
}

}  // namespace test_train_panel
