// The lesson page's file: a temporary file beside --output, renamed once the page is whole.

#include "app/run/lesson_page.h"

#include "app/run/after_run.h"
#include "core/checked.h"
#include "core/error.h"
#include "core/forms/paged_kv.h"
#include "io/atomic_file.h"
#include "show/html_report.h"
#include "show/kv_pool_picture.h"

namespace mha {

namespace {

class LessonPage : public Report {
public:
    LessonPage(const std::string& path, HtmlPage page)
        : file_(path), html_(file_.stream(), std::move(page)) {}

    bool enabled() const override { return true; }
    void begin(const RunInfo& info) override { html_.begin(info); }
    void on_step(const Step& step) override { html_.on_step(step); }
    void model_view(const ModelView& view) override { html_.model_view(view); }
    void finish(const ForwardResult& result, double wall_ms) override {
        html_.finish(result, wall_ms);
        file_.commit();
    }

private:
    AtomicFile file_;
    HtmlReport html_;
};

// Whether the page draws a paged cache's pool (show/kv_pool_picture.h): B · ceil(T / S)
// blocks of S slots, few enough to draw.
bool pool_drawn(const Config& config, const RunInfo& info) {
    if (!config.kv_block_size) return false;
    const std::size_t S = *config.kv_block_size;
    const double slots = double(info.batch) * double(blocks_for(info.seq_len, S)) * double(S);
    return slots <= double(max_pictured_slots);
}

}  // namespace

void check_lesson_page(const Config& config, const RunInfo& info, std::size_t steps,
                       std::size_t layers) {
    check_writable(config.output_path);
    const std::size_t maps = info.shapes_only ? 0 : drawn_maps(config, info.heads) * layers;
    const std::uint64_t bytes = html_size_bound(steps, maps, info, pool_drawn(config, info));
    if (bytes > max_page_bytes) {
        throw Error("--format html --output " + config.output_path + " would take up to " +
                    byte_size(bytes) + " (" + std::to_string(steps) + " steps, " +
                    std::to_string(maps) + " heatmaps of " + std::to_string(info.seq_len) + "x" +
                    std::to_string(info.kv_len) + " cells), more than the " +
                    byte_size(max_page_bytes) +
                    " a page may take; draw fewer heads with --head or use fewer positions");
    }
}

std::unique_ptr<Report> lesson_page(const Config& config, std::vector<std::vector<bool>> blocked) {
    HtmlPage page;
    page.choice = MapChoice{config.view_heads, config.mean_view, {}};
    page.blocked = std::move(blocked);
    page.auto_scale = config.auto_scale;
    return std::make_unique<LessonPage>(config.output_path, std::move(page));
}

}  // namespace mha
