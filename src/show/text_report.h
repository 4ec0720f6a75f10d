#pragma once
// The human-readable report: the configuration, every step in two lines plus its
// notes, mask grid and values, then the output's statistics; 80 columns.

#include "show/report.h"

#include <ostream>
#include <string>
#include <vector>

namespace mha {

// Step 8's grid, queries as rows and keys as columns: "." the query may attend to the key,
// "x" blocked; every line starts with indent.
void write_mask_grid(std::ostream& out, const std::vector<std::vector<bool>>& allowed,
                     const std::string& indent);

class TextReport : public Report {
public:
    // trace false: only begin() and finish() print, and the forward pass builds no Step.
    TextReport(std::ostream& out, bool trace) : out_(out), trace_(trace) {}

    bool enabled() const override { return trace_; }
    void begin(const RunInfo& info) override;
    void on_step(const Step& step) override;
    void finish(const ForwardResult& result, double wall_ms) override;

private:
    std::ostream& out_;
    bool trace_;
    RunInfo info_;
    std::string previous_why_;  // for --explain: a paragraph per run of one kind, not per tensor
};

}  // namespace mha
