#pragma once
// A printer for a whole run: told the configuration first, then every step as a
// Tracer, then the finished result.

#include "core/attention.h"
#include "core/step.h"
#include "show/run_info.h"

namespace mha {

// The app calls begin(), runs forward() with the report as its tracer, then finish().
class Report : public Tracer {
public:
    virtual void begin(const RunInfo& info) = 0;
    virtual void finish(const ForwardResult& result, double wall_ms) = 0;
};

}  // namespace mha
