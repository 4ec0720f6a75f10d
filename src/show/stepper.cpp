// --step: each step's text goes through a buffer so that b can show it again.

#include "show/stepper.h"

#include "show/format.h"

#include <algorithm>

namespace mha {

Key key_of(const std::string& bytes) {
    if (bytes == "\r" || bytes == "\n" || bytes == " " || bytes == "n" || bytes == "\x1b[C" ||
        bytes == "\x1bOC")
        return Key::Next;
    if (bytes == "b" || bytes == "p" || bytes == "\x7f" || bytes == "\x1b[D" || bytes == "\x1bOD")
        return Key::Back;
    if (bytes == "q" || bytes == "Q" || bytes == "\x04" || bytes == "\x03" || bytes == "\x1b")
        return Key::Quit;
    return Key::Other;
}

std::string Stepper::take_buffer() {
    std::string text = buffer_.str();
    buffer_.str("");
    return text;
}

void Stepper::begin(const RunInfo& info) {
    text_.begin(info);
    out_ << take_buffer() << std::flush;
}

void Stepper::on_step(const Step& step) {
    text_.on_step(step);
    shown_.push_back(take_buffer());
    numbers_.push_back(step_number(step));
    out_ << shown_.back() << std::flush;
    if (keys_ != nullptr) pause();
}

void Stepper::finish(const ForwardResult& result, double wall_ms) {
    keys_.reset();  // a terminal goes back to its own mode before the views and --save
    // the pass's own time: the caller's clock also ran while the learner read the steps
    const double waited_ms = std::chrono::duration<double, std::milli>(waited_).count();
    text_.finish(result, std::max(0.0, wall_ms - waited_ms));
    out_ << take_buffer() << std::flush;
}

// "-- step 7 (9 of 19) · Enter: next  b: back  q: quit -- ": the number the trace prints,
// then how many of the run's steps have been shown (several steps may share a number)
std::string Stepper::prompt(std::size_t at) const {
    std::string where = "step " + numbers_[at] + " (" + std::to_string(at + 1);
    if (total_ >= shown_.size()) where += " of " + std::to_string(total_);
    return "-- " + where + ") · Enter: next  b: back  q: quit -- ";
}

// Step at alone on a cleared screen (cursor home, erase the screen), not below the others.
void Stepper::redraw(std::size_t at) { out_ << "\x1b[H\x1b[2J" << shown_[at] << std::flush; }

// Waits on the step just printed. b walks back through the steps already shown and
// Enter walks forward again, each drawn alone on a cleared screen; from the newest step,
// Enter lets the forward pass go on.
// The prompt is erased ("\r", erase line) once a key has been read.
void Stepper::pause() {
    std::size_t at = shown_.size() - 1;
    for (;;) {
        prompts_ << prompt(at) << std::flush;
        const auto asked = std::chrono::steady_clock::now();
        const Key key = keys_->next_key();
        waited_ += std::chrono::steady_clock::now() - asked;
        prompts_ << "\r\x1b[K" << std::flush;
        if (key == Key::End) {
            keys_.reset();  // the keyboard is gone: print the rest like --trace
            return;
        }
        if (key == Key::Quit) throw StepQuit{};
        if (key == Key::Back) {
            if (at > 0) --at;
            redraw(at);
        } else if (key == Key::Next) {
            if (at + 1 == shown_.size()) return;
            redraw(++at);
        }
    }
}

}  // namespace mha
