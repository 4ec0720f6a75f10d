#pragma once
// --format html --output FILE: the lesson page (show/html_report.h) written whole or not at
// all (io/atomic_file.h), and the checks before the run: the file can be written and the
// page's size estimate fits.

#include "app/cli/config.h"
#include "show/report.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace mha {

// A page is refused before the run when it could be larger than this.
inline constexpr std::uint64_t max_page_bytes = std::uint64_t(256) << 20;

// Throws mha::Error when --output cannot be written, or when a page of `steps` steps and
// the heatmaps --head asks for (of each of `layers` layers: a model draws them all) could
// outgrow max_page_bytes.
void check_lesson_page(const Config& config, const RunInfo& info, std::size_t steps,
                       std::size_t layers = 1);

// The report that writes the page; the file appears when finish() completes.
// blocked: per head of batch 0, the (N, M) keys the mask hides (app/run/after_run.h), or empty.
std::unique_ptr<Report> lesson_page(const Config& config, std::vector<std::vector<bool>> blocked);

}  // namespace mha
