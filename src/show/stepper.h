#pragma once
// --step: the text trace, one step at a time. After each step it waits for a key
// line: Enter shows the next step, b shows the one before, q stops the run. With
// no keyboard (stdin not a terminal) it prints exactly what --trace prints.

#include "show/text_report.h"

#include <istream>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

namespace mha {

// Thrown when the learner presses q; main() ends the run quietly with status 0.
struct StepQuit {};

class Stepper : public Report {
public:
    // keys: where the key lines come from, or nullptr for no pauses (then it is --trace).
    // prompts go to their own stream so that out stays byte for byte the trace.
    Stepper(std::ostream& out, std::istream* keys, std::ostream& prompts)
        : out_(out), keys_(keys), prompts_(prompts), text_(buffer_, true) {}

    bool enabled() const override { return true; }
    void begin(const RunInfo& info) override;
    void on_step(const Step& step) override;
    void finish(const ForwardResult& result, double wall_ms) override;

private:
    std::string take_buffer();
    void pause();

    std::ostream& out_;
    std::istream* keys_;
    std::ostream& prompts_;
    std::ostringstream buffer_;        // the text report writes here first
    TextReport text_;
    std::vector<std::string> shown_;   // every step's text so far, for b
};

}  // namespace mha
