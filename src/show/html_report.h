#pragma once
// --format html: a lesson page in one self-contained HTML file (no network, no external
// script or font): the run's header, the heatmaps as inline SVG first, then every step
// (expression, shape, strides, copies, multiply-adds, notes, the explanation; K's and V's
// repeats of a step in Q's card), step 8's mask grid, a paged cache's memory picture, arrow keys to step through and a
// read-out of the weight under the pointer. For a trained model (--model) or a checkpoint:
// the prediction, the heads of every layer (or the --layer layer's) and the head roles as a
// table first, then the traced layer's steps; a checkpoint's header lists the config.json
// keys read.

#include "show/model_view.h"
#include "show/report.h"
#include "show/weight_maps.h"

#include <cstdint>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

namespace mha {

struct HtmlPage {
    MapChoice choice;                        // the heads to draw (all by default)
    std::vector<std::vector<bool>> blocked;  // per head, (N, M) keys the mask hides; or empty
    bool auto_scale = false;                 // --scale auto
};

class HtmlReport : public Report {
public:
    HtmlReport(std::ostream& out, HtmlPage page) : out_(out), page_(std::move(page)) {}

    bool enabled() const override { return true; }
    void begin(const RunInfo& info) override;
    void on_step(const Step& step) override;
    void finish(const ForwardResult& result, double wall_ms) override;
    void model_view(const ModelView& view) override { model_ = view; }

private:
    void write_config_keys(const RunInfo& info);
    void write_maps(const ForwardResult& result);
    void write_model_view(const ModelView& view);

    std::ostream& out_;
    HtmlPage page_;
    RunInfo info_;
    std::size_t steps_ = 0;
    std::uint64_t copied_bytes_ = 0, macs_ = 0;
    std::ostringstream steps_html_;  // the steps' cards, written after the heads at finish
    // the last step's explanation, number and name: a step that repeats all three (K's and
    // V's view and transpose after Q's) folds into its card
    std::string previous_why_, previous_number_, previous_name_;
    std::optional<ModelView> model_;  // a model run's every-layer view, drawn instead of maps
};

// At least as many bytes as the page takes: `steps` steps, each at most max_step_bytes
// besides its mask grid, step 8's (N, M) grid, and `maps` heatmaps of (N, M) cells;
// pool_drawn: each step may also draw a paged cache's pool (show/kv_pool_picture.h).
std::uint64_t html_size_bound(std::size_t steps, std::size_t maps, const RunInfo& info,
                              bool pool_drawn = false);

// What one step's section takes at most, besides its mask grid: the expression, notes and
// explanation of any step are a few hundred characters, escaped at most sixfold.
inline constexpr std::uint64_t max_step_bytes = 16 << 10;

}  // namespace mha
