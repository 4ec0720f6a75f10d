#pragma once
// A printer for a whole run: told the configuration first, then every step as a
// Tracer, then the finished result.

#include "core/pass/attention.h"
#include "core/pass/step.h"
#include "show/run_info.h"

namespace mha {

struct ModelView;  // show/model_view.h

// The app calls begin(), runs forward() with the report as its tracer, then finish().
class Report : public Tracer {
public:
    virtual void begin(const RunInfo& info) = 0;
    virtual void finish(const ForwardResult& result, double wall_ms) = 0;
    // A trained model's run (--model) hands over, before finish(), what it shows besides the
    // traced layer; the lesson page draws it, the other printers leave it to the terminal.
    virtual void model_view(const ModelView&) {}
};

}  // namespace mha
