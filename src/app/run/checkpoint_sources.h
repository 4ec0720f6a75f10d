#pragma once
// Where a checkpoint run's numbers came from: for the traced layer, each step's config.json
// keys and tensor names in words, added to the steps on their way to the report.

#include <map>
#include <string>
#include <vector>

#include "core/pass/step.h"
#include "io/checkpoint/config.h"

namespace mha {

// The words for layer `layer`'s steps, by the kind of step they describe.
std::map<StepKind, std::vector<std::string>> checkpoint_sources(const checkpoint::Config& config,
                                                                std::size_t layer);

// Passes every step on to `inner`, with the sources of its kind added to its facts.
class SourcedTracer final : public Tracer {
public:
    SourcedTracer(Tracer& inner, std::map<StepKind, std::vector<std::string>> sources)
        : inner_(inner), sources_(std::move(sources)) {}
    bool enabled() const override { return inner_.enabled(); }
    void on_step(const Step& step) override;

private:
    Tracer& inner_;
    std::map<StepKind, std::vector<std::string>> sources_;
};

}  // namespace mha
