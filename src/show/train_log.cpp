// mha train --log's line for one evaluation.

#include "show/train_log.h"

#include <cmath>
#include <cstdio>
#include <vector>

namespace mha {

namespace {

std::string json_number(double value) {
    if (!std::isfinite(value)) return "null";
    char text[32];
    std::snprintf(text, sizeof text, "%.6g", value);
    return text;
}

std::string json_grid(const std::vector<std::vector<double>>& grid) {
    std::string out = "[";
    for (std::size_t l = 0; l < grid.size(); ++l) {
        out += l ? ",[" : "[";
        for (std::size_t h = 0; h < grid[l].size(); ++h)
            out += (h ? "," : "") + json_number(grid[l][h]);
        out += "]";
    }
    return out + "]";
}

}  // namespace

std::string train_log_line(const TrainEvaluation& e) {
    return "{\"step\":" + std::to_string(e.step) + ",\"seconds\":" + json_number(e.seconds) +
           ",\"loss\":" + json_number(e.loss) + ",\"val_loss\":" + json_number(e.val_loss) +
           ",\"prev_token\":" + json_grid(e.prev_token) +
           ",\"induction\":" + json_grid(e.induction) + "}";
}

}  // namespace mha
