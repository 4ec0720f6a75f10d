// mha: multi-head attention, step by step. The pipeline in order:
//   argv -> Config -> Problem (weights, inputs, masks) -> forward (traced) -> report
//   -> views of the result (heatmaps, summary, SVG, ablation) -> save
// `mha quiz ...`, `mha grade ...` and `mha bench ...` go to their subcommands instead.
// Every error becomes one line on stderr and exit status 2.

#include <unistd.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <new>

#include "app/after_run.h"
#include "app/bench.h"
#include "app/cli.h"
#include "app/grade.h"
#include "app/presets.h"
#include "app/problem.h"
#include "app/quiz.h"
#include "app/variants.h"
#include "core/attention.h"
#include "core/error.h"
#include "io/npy.h"
#include "show/json_report.h"
#include "show/markdown_report.h"
#include "show/stepper.h"
#include "show/tee_tracer.h"
#include "show/text_report.h"

namespace {

std::unique_ptr<mha::Report> make_report(const mha::Config& config) {
    if (config.format == mha::Format::Json) return std::make_unique<mha::JsonReport>(std::cout);
    if (config.format == mha::Format::Markdown)
        return std::make_unique<mha::MarkdownReport>(std::cout);
    if (config.step) {
        std::istream* keys = isatty(STDIN_FILENO) ? &std::cin : nullptr;
        return std::make_unique<mha::Stepper>(std::cout, keys, std::cerr);
    }
    return std::make_unique<mha::TextReport>(std::cout, config.trace);
}

// A bool/int mask that hides the diagonal or a whole row is most likely written 1 = keep;
// then the way forward is --mask-means keep, not zeroing the NaN rows.
void warn_masked_rows(const mha::ForwardResult& result, bool zeroed, bool mask_looks_keep) {
    if (mask_looks_keep) {
        std::cerr << "mha: warning: the --mask file blocks every query's own key or all keys of a "
                     "query, as PyTorch reads it (True/1 = blocked); if your mask means 1 = keep "
                     "(masked_fill(mask == 0, -inf)), add --mask-means keep\n";
    }
    if (result.fully_masked_rows == 0) return;
    std::cerr << "mha: warning: " << result.fully_masked_rows
              << " query row(s) have every key blocked; their attention weights are "
              << (zeroed ? "zero (--masked-rows zero)"
                  : mask_looks_keep ? "NaN, as in PyTorch"
                                    : "NaN, as in PyTorch (--masked-rows zero gives zeros)")
              << "\n";
}

// --shapes-only: the steps from sizes alone; nothing computed, nothing allocated.
int run_shapes_only(const mha::Config& config) {
    const mha::ShapesProblem problem = mha::build_shapes(config);
    const std::unique_ptr<mha::Report> report = make_report(config);
    report->begin(problem.info);
    const auto start = std::chrono::steady_clock::now();
    for (const mha::Step& step : mha::plan_pass(problem.spec)) report->on_step(step);
    const std::chrono::duration<double, std::milli> elapsed =
        std::chrono::steady_clock::now() - start;
    report->finish(mha::ForwardResult{}, elapsed.count());
    return 0;
}

int run(const std::vector<std::string>& args) {
    if (!args.empty() && args[0] == "quiz")
        return mha::run_quiz({args.begin() + 1, args.end()}, std::cin, isatty(STDIN_FILENO), std::cout);
    if (!args.empty() && args[0] == "grade") return mha::run_grade({args.begin() + 1, args.end()}, std::cin, std::cout);
    if (!args.empty() && args[0] == "bench") return mha::run_bench({args.begin() + 1, args.end()});
    const mha::Config config = mha::parse_args(args);
    if (config.help) {
        std::cout << mha::help_text();
        return 0;
    }
    if (config.version) {
        std::cout << mha::version_text << "\n";
        return 0;
    }
    if (config.list_presets) {
        std::cout << mha::presets_table();
        return 0;
    }
    if (config.shapes_only) return run_shapes_only(config);
    const mha::Problem problem = mha::build_problem(config);
    if (!config.save_path.empty()) mha::npy::check_writable(config.save_path);
    if (!config.svg_path.empty()) mha::npy::check_writable(config.svg_path);

    const std::unique_ptr<mha::Report> report = make_report(config);
    report->begin(problem.info);
    const auto start = std::chrono::steady_clock::now();
    mha::ScoreStats score_stats(mha::wants_summary(config));
    mha::TeeTracer tracer(*report, score_stats);
    const mha::ForwardResult result = mha::run_pass(config, problem, tracer);
    const std::chrono::duration<double, std::milli> elapsed =
        std::chrono::steady_clock::now() - start;
    report->finish(result, elapsed.count());
    mha::show_after_run(std::cout, config, problem, result, score_stats);
    warn_masked_rows(result, config.zero_masked_rows, problem.mask_looks_keep);

    if (!config.save_path.empty()) {
        mha::npy::write_npz(config.save_path,
                            {{"output", result.output}, {"attn_weights", result.weights}});
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(std::vector<std::string>(argv + 1, argv + argc));
    } catch (const mha::StepQuit&) {
        return 0;
    } catch (const mha::Error& error) {
        std::cerr << "mha: error: " << error.what() << "\n";
    } catch (const std::bad_alloc&) {
        std::cerr << "mha: error: out of memory; try smaller sizes or a lower --max-memory\n";
    } catch (const std::exception& error) {
        std::cerr << "mha: error: " << error.what() << "\n";
    }
    return 2;
}
