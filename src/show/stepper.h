#pragma once
// --step: the text trace, one step at a time, for a projector. After each step it shows
// the trace's step number and how far the run is ("step 7 (9 of 19)") and waits for one
// key: Enter (or space, n, the right arrow) shows the next step, b (or the left arrow) the
// one before, q stops the run. Going back or forth through the steps already shown clears
// the screen and draws that step alone, at the top. The prompt is erased once a key is
// read. The wall time it reports leaves out the time spent waiting for keys. With no
// keyboard (stdin not a terminal) it prints exactly what --trace prints.

#include "show/text_report.h"

#include <chrono>
#include <memory>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

namespace mha {

// Thrown when the learner presses q; main() ends the run quietly with status 0.
struct StepQuit {};

enum class Key { Next, Back, Quit, Other, End };  // End: no more keys will come

// What a key's bytes mean: "\r", "\n", " ", "n", "\x1b[C" next; "b", "p", "\x7f", "\x1b[D"
// back; "q", "Q", Ctrl-D, Ctrl-C, a lone Escape quit; anything else Other.
Key key_of(const std::string& bytes);

// Where --step's keys come from: a terminal in raw mode (app/cli/terminal.h), or a script.
class KeySource {
public:
    virtual ~KeySource() = default;
    virtual Key next_key() = 0;
};

class Stepper : public Report {
public:
    // keys: null for no pauses (then it is --trace); released (a terminal restored) at finish.
    // Prompts go to their own stream so that out stays byte for byte the trace.
    // total: the number of steps the run will report, or 0 when not known.
    Stepper(std::ostream& out, std::unique_ptr<KeySource> keys, std::ostream& prompts,
            std::size_t total)
        : out_(out),
          keys_(std::move(keys)),
          prompts_(prompts),
          total_(total),
          text_(buffer_, true) {}

    bool enabled() const override { return true; }
    void begin(const RunInfo& info) override;
    void on_step(const Step& step) override;
    void finish(const ForwardResult& result, double wall_ms) override;

private:
    std::string take_buffer();
    void pause();
    std::string prompt(std::size_t at) const;
    void redraw(std::size_t at);

    std::ostream& out_;
    std::unique_ptr<KeySource> keys_;
    std::ostream& prompts_;
    std::size_t total_;
    std::ostringstream buffer_;  // the text report writes here first
    TextReport text_;
    std::vector<std::string> shown_;                // every step's text so far, for b
    std::vector<std::string> numbers_;              // the trace's number of each step shown
    std::chrono::steady_clock::duration waited_{};  // time spent waiting for keys
};

}  // namespace mha
