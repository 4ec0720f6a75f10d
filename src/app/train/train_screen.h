#pragma once
// What `mha train` shows as it trains: on a terminal, the live panel (show/train_panel.h) in
// the alternate screen, redrawn in place; otherwise one plain progress line per evaluation.

#include <chrono>
#include <cstddef>
#include <optional>
#include <ostream>

#include "show/train_panel.h"

namespace mha {

// The live panel only when stdout is a terminal and NO_COLOR is unset or empty.
bool wants_live_panel(bool stdout_is_terminal, const char* no_color);

// Live: the alternate screen and a hidden cursor while this object lives, the panel redrawn in
// place (cursor home, each line, clear to its end; never the whole screen), at most ten times a
// second unless an evaluation came; on destruction the screen and the cursor restored, and the
// last panel drawn once more on the normal screen, where it stays. SIGTERM and SIGHUP restore
// the terminal before they end the process; Ctrl-Z restores it before the process stops, and
// fg takes the alternate screen again. SIGINT is the trainer's: it returns normally and this
// object goes. Plain: train_progress_line once per evaluation, nothing else.
class TrainScreen {
public:
    TrainScreen(std::ostream& out, bool live);
    TrainScreen(const TrainScreen&) = delete;
    TrainScreen& operator=(const TrainScreen&) = delete;
    ~TrainScreen();

    // Called with each snapshot (as often as the trainer likes).
    void show(const TrainSnapshot& snapshot);
    // Whether show would draw a snapshot now: the trainer may skip building one otherwise.
    bool due(std::size_t evaluations) const;

private:
    void draw(const TrainSnapshot& snapshot);

    std::ostream& out_;
    bool live_;
    std::size_t evaluations_shown_ = 0;
    std::optional<std::chrono::steady_clock::time_point> last_drawn_;
    std::optional<TrainSnapshot> last_;  // live: the panel drawn last, drawn again at the end
};

}  // namespace mha
