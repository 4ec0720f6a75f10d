// --step: each step's text goes through a buffer so that b can show it again.

#include "show/stepper.h"

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
    out_ << shown_.back() << std::flush;
    if (keys_ != nullptr) pause();
}

void Stepper::finish(const ForwardResult& result, double wall_ms) {
    keys_.reset();  // a terminal goes back to its own mode before the views and --save
    text_.finish(result, wall_ms);
    out_ << take_buffer() << std::flush;
}

// "-- step 5 of 19 · Enter: next  b: back  q: quit -- "
std::string Stepper::prompt(std::size_t at) const {
    std::string where = "step " + std::to_string(at + 1);
    if (total_ >= shown_.size()) where += " of " + std::to_string(total_);
    return "-- " + where + " · Enter: next  b: back  q: quit -- ";
}

// Waits on the step just printed. b walks back through the steps already shown and
// Enter walks forward again; from the newest step, Enter lets the forward pass go on.
// The prompt is erased ("\r", erase line) once a key has been read.
void Stepper::pause() {
    std::size_t at = shown_.size() - 1;
    for (;;) {
        prompts_ << prompt(at) << std::flush;
        const Key key = keys_->next_key();
        prompts_ << "\r\x1b[K" << std::flush;
        if (key == Key::End) {
            keys_.reset();  // the keyboard is gone: print the rest like --trace
            return;
        }
        if (key == Key::Quit) throw StepQuit{};
        if (key == Key::Back) {
            if (at > 0) --at;
            out_ << shown_[at] << std::flush;
        } else if (key == Key::Next) {
            if (at + 1 == shown_.size()) return;
            ++at;
            out_ << shown_[at] << std::flush;
        }
    }
}

}  // namespace mha
