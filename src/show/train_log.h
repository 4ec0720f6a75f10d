#pragma once
// mha train --log: one JSON object per evaluation, one line each.

#include <string>

#include "show/train_panel.h"

namespace mha {

// {"step":…,"seconds":…,"loss":…,"val_loss":…,"prev_token":[[…]],"induction":[[…]]}: numbers
// in 6 significant digits, null for NaN or infinity (the loss at step 0), scores [layer][head].
std::string train_log_line(const TrainEvaluation& evaluation);

}  // namespace mha
