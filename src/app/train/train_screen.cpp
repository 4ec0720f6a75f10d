// The training display on the terminal: the alternate screen, redraws in place, and the
// terminal restored on every way out but SIGKILL.

#include "app/train/train_screen.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <csignal>
#include <iterator>
#include <string>
#include <vector>

#include "app/cli/terminal.h"
#include "show/text_layout.h"

namespace mha {

namespace {

constexpr std::size_t fallback_columns = 80, fallback_rows = 24;
constexpr auto redraw_interval = std::chrono::milliseconds(100);

// The alternate screen with the cursor hidden, and back to the normal screen with the cursor.
const char enter_sequence[] = "\x1b[?1049h\x1b[?25l";
const char leave_sequence[] = "\x1b[?25h\x1b[?1049l";

// Signals that end the process, then Ctrl-Z's. Never SIGINT: the trainer's.
constexpr int handled_signals[] = {SIGTERM, SIGHUP, SIGTSTP};
struct sigaction previous_actions[std::size(handled_signals)];

void write_all(const char* text, std::size_t size) {
    while (size > 0) {
        const ssize_t written = write(STDOUT_FILENO, text, size);
        if (written <= 0) return;
        text += written;
        size -= std::size_t(written);
    }
}

const struct sigaction& previous_action(int signal_number) {
    std::size_t i = 0;
    while (handled_signals[i] != signal_number) ++i;
    return previous_actions[i];
}

// SIGTERM, SIGHUP: the normal screen and the cursor back, then the signal does what it did
// before (end the process, or a handler that removes a temporary file first).
extern "C" void leave_and_resignal(int signal_number) {
    write_all(leave_sequence, sizeof leave_sequence - 1);
    sigaction(signal_number, &previous_action(signal_number), nullptr);
    raise(signal_number);
}

// Ctrl-Z: the shell gets its normal screen and cursor, the process stops as it did before;
// once continued (fg), this handler comes back and the panel takes the alternate screen again.
extern "C" void leave_and_suspend(int signal_number) {
    write_all(leave_sequence, sizeof leave_sequence - 1);
    stop_as_before(signal_number, previous_action(signal_number));
    write_all(enter_sequence, sizeof enter_sequence - 1);
}

void install_handlers() {
    for (std::size_t i = 0; i < std::size(handled_signals); ++i) {
        struct sigaction action {};
        action.sa_handler = handled_signals[i] == SIGTSTP ? leave_and_suspend : leave_and_resignal;
        sigemptyset(&action.sa_mask);
        for (int other : handled_signals) sigaddset(&action.sa_mask, other);
        sigaction(handled_signals[i], nullptr, &previous_actions[i]);
        if (previous_actions[i].sa_handler != SIG_IGN)  // an ignored signal stays ignored
            sigaction(handled_signals[i], &action, nullptr);
    }
}

void restore_handlers() {
    for (std::size_t i = 0; i < std::size(handled_signals); ++i)
        sigaction(handled_signals[i], &previous_actions[i], nullptr);
}

struct ScreenSize {
    std::size_t columns, rows;
};

ScreenSize screen_size() {
    winsize size{};
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0 && size.ws_row > 0)
        return {size.ws_col, size.ws_row};
    return {fallback_columns, fallback_rows};
}

}  // namespace

bool wants_live_panel(bool stdout_is_terminal, const char* no_color) {
    return stdout_is_terminal && (no_color == nullptr || no_color[0] == '\0');
}

TrainScreen::TrainScreen(std::ostream& out, bool live) : out_(out), live_(live) {
    if (!live_) return;
    out_ << enter_sequence << std::flush;
    install_handlers();
}

TrainScreen::~TrainScreen() {
    if (!live_) return;
    restore_handlers();
    out_ << leave_sequence;
    if (last_) {
        const ScreenSize size = screen_size();
        for (const std::string& line : train_panel(*last_, size.columns, size.rows, true))
            out_ << line << "\n";
    }
    out_ << std::flush;
}

bool TrainScreen::due(std::size_t evaluations) const {
    if (evaluations > evaluations_shown_) return true;
    return live_ &&
           (!last_drawn_ || std::chrono::steady_clock::now() - *last_drawn_ >= redraw_interval);
}

void TrainScreen::show(const TrainSnapshot& snapshot) {
    const bool last_step = snapshot.steps > 0 && snapshot.step >= snapshot.steps;
    if (!due(snapshot.history.size()) && !(live_ && last_step)) return;
    if (live_) {
        draw(snapshot);
    } else {
        out_ << train_progress_line(snapshot) << std::endl;
    }
    evaluations_shown_ = snapshot.history.size();
}

// Cursor home, then each line and the rest of its row cleared, then the rows below it: the
// old panel is overwritten, never blanked first, so nothing flickers. A line that fills its
// row leaves the cursor on its last character, which a clear would erase: it needs none.
void TrainScreen::draw(const TrainSnapshot& snapshot) {
    const ScreenSize size = screen_size();
    const std::vector<std::string> lines = train_panel(snapshot, size.columns, size.rows, true);
    std::string frame = "\x1b[H";
    for (std::size_t i = 0; i < lines.size(); ++i) {
        frame += lines[i];
        if (visible_width(lines[i]) < size.columns) frame += "\x1b[K";
        if (i + 1 < lines.size()) frame += "\r\n";
    }
    frame += "\x1b[J";
    out_ << frame << std::flush;
    last_drawn_ = std::chrono::steady_clock::now();
    last_ = snapshot;
}

}  // namespace mha
