#pragma once
// The machine-readable report: one JSON document streamed as the run goes, one
// line per step, NaN and infinities written as null.

#include "show/report.h"

#include <ostream>

namespace mha {

// The version of the document's layout, docs/json-schema.md. It goes up by one
// whenever a field is renamed, removed or changes meaning; new fields keep it.
inline constexpr int json_schema_version = 1;

class JsonReport : public Report {
public:
    explicit JsonReport(std::ostream& out) : out_(out) {}

    bool enabled() const override { return true; }
    void begin(const RunInfo& info) override;
    void on_step(const Step& step) override;
    void finish(const ForwardResult& result, double wall_ms) override;

private:
    std::ostream& out_;
    bool values_ = false;     // RunInfo::values: write every tensor's values in full
    bool first_step_ = true;  // no comma before the first step
    RunInfo info_;            // what begin() was told
};

}  // namespace mha
