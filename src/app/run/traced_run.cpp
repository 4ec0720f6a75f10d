// A traced run recorded step by step: the text report prints each step into a buffer,
// and the text is kept with the step.

#include "app/run/traced_run.h"

#include <algorithm>
#include <sstream>

#include "app/run/problem.h"
#include "app/run/variants.h"
#include "core/error.h"
#include "show/text_report.h"

namespace mha {

namespace {

class Recorder : public Tracer {
public:
    Recorder(Trace& trace, const RunInfo& info) : trace_(trace), text_(buffer_, true) {
        text_.begin(info);
        trace_.info = info;
        trace_.header = take();
    }

    void on_step(const Step& step) override {
        text_.on_step(step);
        Recorded recorded{step, take()};
        recorded.step.value = nullptr;
        recorded.text.erase(0, recorded.text.find_first_not_of('\n'));
        trace_.steps.push_back(recorded);
    }

private:
    std::string take() {
        std::string text = buffer_.str();
        buffer_.str("");
        return text;
    }

    Trace& trace_;
    std::ostringstream buffer_;
    TextReport text_;
};

}  // namespace

const Recorded& Trace::find(int number, const std::string& tensor, bool backward) const {
    const Recorded* found = nullptr;
    for (const Recorded& r : steps) {
        if (r.step.number != number || r.step.tensor != tensor || r.step.backward != backward)
            continue;
        found = &r;
        if (!backward) break;
    }
    if (found == nullptr) {
        const bool traced_backward = std::any_of(steps.begin(), steps.end(),
                                                 [](const Recorded& r) { return r.step.backward; });
        throw Error("the trace has no step " + std::string(backward ? "b" : "") +
                    std::to_string(number) + " for " + tensor +
                    (backward && !traced_backward ? " (a backward step needs --backward)" : ""));
    }
    return *found;
}

const Recorded& Trace::find(StepKind kind, Operand operand) const {
    const Recorded* found = nullptr;
    for (const Recorded& r : steps) {
        if (r.step.kind != kind || r.step.operand != operand) continue;
        if (found != nullptr) {
            throw Error("the trace has more than one step " + std::to_string(r.step.number) + " " +
                        r.step.name + " (one per head in this form)");
        }
        found = &r;
    }
    if (found == nullptr) {
        throw Error("the trace of this form has no such step (a key asks for the packed pass's)");
    }
    return *found;
}

std::string Trace::parameters_line() const {
    std::istringstream lines(header);
    for (std::string line; std::getline(lines, line);) {
        const std::size_t at = line.find("parameters:");
        if (at != std::string::npos) return line.substr(at) + "\n";
    }
    return "";
}

Trace traced(const Config& config) {
    const Problem problem = build_problem(config);
    Trace trace;
    Recorder recorder(trace, problem.info);
    const ForwardResult result = config.backward ? run_backward(config, problem, recorder).forward
                                                 : run_pass(config, problem, recorder);
    trace.output = stats_of(result.output);
    return trace;
}

}  // namespace mha
