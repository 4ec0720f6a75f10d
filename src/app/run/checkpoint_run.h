#pragma once
// --checkpoint DIR --tokens ID,...: a Hugging Face model folder run on token ids through the
// one pass, a layer at a time within --max-memory; one layer traced (--layer), the top-5 next
// tokens, every layer's heads and their roles, --save. --config FILE --shapes-only: the same
// run done dry from config.json alone.

#include <ostream>

#include "app/cli/config.h"
#include "app/run/model_run.h"

namespace mha {

// Prints to out; throws mha::Error for a bad folder, a token or layer out of range, or a
// working set beyond --max-memory (before any tensor is read).
void run_checkpoint(const Config& config, const ReportFor& report_for, std::ostream& out);

// --shapes-only with --config FILE (or --checkpoint DIR, whose config.json is read alone).
void run_checkpoint_shapes(const Config& config, const ReportFor& report_for, std::ostream& out);

}  // namespace mha
