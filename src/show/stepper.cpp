// --step: each step's text goes through a buffer so that b can show it again.

#include "show/stepper.h"

namespace mha {

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
    text_.finish(result, wall_ms);
    out_ << take_buffer() << std::flush;
}

// Waits on the step just printed. b walks back through the steps already shown and
// Enter walks forward again; from the newest step, Enter lets the forward pass go on.
void Stepper::pause() {
    std::size_t at = shown_.size() - 1;
    for (;;) {
        prompts_ << "-- Enter: next  b: back  q: quit -- " << std::flush;
        std::string key;
        if (!std::getline(*keys_, key)) {
            keys_ = nullptr;  // the keyboard is gone: print the rest like --trace
            prompts_ << "\n";
            return;
        }
        if (key == "q") throw StepQuit{};
        if (key == "b") {
            if (at > 0) --at;
            out_ << shown_[at] << std::flush;
        } else if (at + 1 < shown_.size()) {
            ++at;
            out_ << shown_[at] << std::flush;
        } else {
            return;
        }
    }
}

}  // namespace mha
