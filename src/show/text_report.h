#pragma once
// The human-readable report: the configuration, every step in two lines plus its
// notes, mask grid and values, then the output's statistics; 80 columns.

#include "show/report.h"

#include <ostream>
#include <vector>

namespace mha {

class TextReport : public Report {
public:
    // trace false: only begin() and finish() print, and the forward pass builds no Step.
    TextReport(std::ostream& out, bool trace) : out_(out), trace_(trace) {}

    bool enabled() const override { return trace_; }
    void begin(const RunInfo& info) override;
    void on_step(const Step& step) override;
    void finish(const ForwardResult& result, double wall_ms) override;

private:
    void print_grid(const std::vector<std::vector<bool>>& allowed);

    std::ostream& out_;
    bool trace_;
    RunInfo info_;
};

}  // namespace mha
