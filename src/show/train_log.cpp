// mha train --log's line for one evaluation.

#include "show/train_log.h"

#include <vector>

#include "show/format.h"

namespace mha {

namespace {

std::string json_grid(const std::vector<std::vector<double>>& grid) {
    std::string out = "[";
    for (std::size_t l = 0; l < grid.size(); ++l) {
        out += l ? ",[" : "[";
        for (std::size_t h = 0; h < grid[l].size(); ++h)
            out += (h ? "," : "") + json_number(grid[l][h], 6);
        out += "]";
    }
    return out + "]";
}

}  // namespace

std::string train_log_line(const TrainEvaluation& e) {
    return "{\"step\":" + std::to_string(e.step) + ",\"seconds\":" + json_number(e.seconds, 6) +
           ",\"loss\":" + json_number(e.loss, 6) + ",\"val_loss\":" + json_number(e.val_loss, 6) +
           ",\"prev_token\":" + json_grid(e.prev_token) +
           ",\"induction\":" + json_grid(e.induction) + "}";
}

}  // namespace mha
