#pragma once
// --format markdown: a hand-out for course notes. A heading with the sizes, one
// table row per step (shape, strides, contiguity, bytes copied, multiply-adds),
// the notes, step 8's mask grid (each chunk's, named by its row, when there are several), --explain's paragraphs, totals and the output's statistics. No
// wall time or thread count, so the same options always give the same page.

#include "show/report.h"

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace mha {

class MarkdownReport : public Report {
public:
    explicit MarkdownReport(std::ostream& out) : out_(out) {}

    bool enabled() const override { return true; }
    void begin(const RunInfo& info) override;
    void on_step(const Step& step) override;
    void finish(const ForwardResult& result, double wall_ms) override;

private:
    std::ostream& out_;
    std::vector<std::string> notes_;          // "step 8: causal: ...", listed under the table
    // each mask grid (step 8's, a chunk's or a draft's) under the name of its step and row,
    // "Step 8 (row 5 of the table)", drawn under the notes
    std::vector<std::pair<std::string, std::vector<std::vector<bool>>>> grids_;
    std::size_t rows_ = 0;  // the table's rows so far
    std::vector<std::string> explained_;      // --explain: "**Step 6, scores.** ..." paragraphs
    bool explain_ = false;
    std::string previous_;  // the last step's paragraph
    std::uint64_t copied_bytes_ = 0;
    std::uint64_t macs_ = 0;
    bool shapes_only_ = false;  // --shapes-only: there is no output to describe
    std::optional<KvLedger> ledger_;  // --shapes-only --decode T: the KV cache ledger
    std::string backward_;      // --backward: its multiply-adds against the forward's
    std::string training_;      // --shapes-only --backward: the memory training keeps
};

}  // namespace mha
