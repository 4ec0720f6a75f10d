// mha: multi-head attention, step by step. The pipeline in order:
//   argv -> Config -> Problem (weights, inputs, masks) -> forward (traced) -> report
//   -> views of the result (heatmaps, summary, SVG, ablation) -> save
// `mha quiz ...`, `mha grade ...`, `mha bench ...`, `mha train ...` and `mha tokenize ...` go
// to their subcommands instead.
// Every error becomes one line on stderr and exit status 2.

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <new>

#include "app/bench/bench.h"
#include "app/classroom/grade.h"
#include "app/classroom/quiz.h"
#include "app/cli/cli.h"
#include "app/cli/presets.h"
#include "app/cli/terminal.h"
#include "app/run/after_run.h"
#include "app/run/compare.h"
#include "app/run/gradcheck.h"
#include "app/run/lesson_page.h"
#include "app/run/checkpoint_run.h"
#include "app/run/model_run.h"
#include "app/run/problem.h"
#include "app/run/time_guard.h"
#include "app/run/variants.h"
#include "app/tokenize/tokenize_command.h"
#include "app/train/train.h"
#include "core/error.h"
#include "core/kernels/kernels.h"
#include "core/pass/attention.h"
#include "core/tensor/workspace.h"
#include "io/atomic_file.h"
#include "io/npy.h"
#include "io/printable.h"
#include "io/text.h"
#include "show/json_report.h"
#include "show/markdown_report.h"
#include "show/stepper.h"
#include "show/tee_tracer.h"
#include "show/text_report.h"
#include "show/token_elision.h"

namespace {

// A closed standard descriptor is filled with /dev/null opened read-only, so no file opened
// later takes its number (a --save archive must not receive the trace) and writes to it fail.
void occupy_closed_descriptors() {
    for (const int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) {
        if (fcntl(fd, F_GETFD) == -1 && errno == EBADF) {
            const int null = open("/dev/null", O_RDONLY);
            if (null >= 0 && null != fd) {
                dup2(null, fd);
                close(null);
            }
        }
    }
}

// steps: how many steps the run reports (--step says "step 4 (5 of n)"), 0 when not known.
// blocked: the lesson page's masked cells (app/run/after_run.h).
std::unique_ptr<mha::Report> make_report(const mha::Config& config, std::size_t steps,
                                         std::vector<std::vector<bool>> blocked = {}) {
    if (config.format == mha::Format::Json) return std::make_unique<mha::JsonReport>(std::cout);
    if (config.format == mha::Format::Markdown)
        return std::make_unique<mha::MarkdownReport>(std::cout);
    if (config.format == mha::Format::Html) return mha::lesson_page(config, std::move(blocked));
    if (config.step) {
        std::unique_ptr<mha::KeySource> keys;
        if (isatty(STDIN_FILENO)) keys = std::make_unique<mha::TerminalKeys>();
        return std::make_unique<mha::Stepper>(std::cout, std::move(keys), std::cerr, steps);
    }
    return std::make_unique<mha::TextReport>(std::cout, config.trace);
}

// The report of a --model or --checkpoint run, which counts its own steps.
mha::ReportFor reports_for(const mha::Config& config) {
    return [&config](std::size_t steps) { return make_report(config, steps); };
}

// Names the likely cause when queries lose every key. A bool/int mask that hides the diagonal
// or a whole row is most likely written 1 = keep: the way forward is --mask-means keep, not
// zeroing the NaN rows. Bottom-right causal with N > M leaves the first N - M queries no key,
// where top-left gives each query at least key 0.
void warn_masked_rows(const mha::ForwardResult& result, const mha::Config& config,
                      const mha::RunInfo& info, bool mask_looks_keep) {
    if (mask_looks_keep) {
        std::cerr << "mha: warning: the --mask file blocks every query's own key or all keys of a "
                     "query, as PyTorch reads it (True/1 = blocked); if your mask means 1 = keep "
                     "(masked_fill(mask == 0, -inf)), add --mask-means keep\n";
    }
    if (result.fully_masked_rows == 0) return;
    std::cerr << "mha: warning: " << result.fully_masked_rows
              << " query row(s) have every key blocked; their attention weights are "
              << (config.zero_masked_rows ? "zero (--masked-rows zero)"
                  : mask_looks_keep       ? "NaN, as in PyTorch"
                                          : "NaN, as in PyTorch (--masked-rows zero gives zeros)");
    if (config.backward && !config.zero_masked_rows)
        std::cerr
            << ", and so are the gradients they reach (each weight's gradient sums over every row)";
    if (info.causal && config.causal_align == mha::CausalAlign::BottomRight &&
        info.seq_len > info.kv_len) {
        std::cerr << "; with N = " << info.seq_len << " > M = " << info.kv_len
                  << ", bottom-right --causal gives the first N - M = "
                  << info.seq_len - info.kv_len
                  << " query(s) no key: --causal=top-left aligns query 0 with key 0, as "
                     "is_causal=True does";
    }
    std::cerr << "\n";
}

// --save: the output, the attention weights unless the path streamed (a note says so), and
// with --backward the gradients under their state-dict names.
void save(const mha::Config& config, const mha::Problem& problem,
          const mha::ComputedRun& computed) {
    std::vector<std::pair<std::string, mha::Tensor>> arrays =
        mha::saved_arrays(computed.forward, problem.layout);
    if (config.backward) {
        for (auto& array : problem.mla
                               ? mha::saved_mla_gradients(computed.grads, problem.layout,
                                                          problem.mla_names, problem.options.heads)
                               : mha::saved_gradients(computed.grads, problem.layout,
                                                      problem.weight_names, config.weights_prefix))
            arrays.push_back(std::move(array));
        if (config.block) {
            for (auto& array : mha::block_arrays(computed.block_grads, problem.block_naming,
                                                 "grad." + config.weights_prefix))
                arrays.push_back(std::move(array));
        }
    }
    if (problem.options.path == mha::AttentionPath::Streaming) {
        std::cerr << "mha: note: --save wrote "
                  << (config.backward ? "output and the gradients" : "output")
                  << " without attn_weights: the streaming path never stores them (--attention "
                     "standard does)\n";
    }
    mha::npy::write_npz(config.save_path, arrays);
}

// --shapes-only: the run done dry, on tensors with shapes and no values: every step traced,
// nothing computed, no tensor storage handed out (--model reads its file for the sizes and
// runs the model dry).
int run_shapes_only(const mha::Config& config) {
    if (mha::runs_checkpoint(config)) {
        mha::run_checkpoint_shapes(config, reports_for(config), std::cout);
        return 0;
    }
    if (!config.model_path.empty()) {
        mha::run_model_shapes(config, reports_for(config), std::cerr);
        return 0;
    }
    mha::Problem problem = mha::build_shapes(config);
    const bool counted = config.step || config.format == mha::Format::Html;
    const std::size_t steps = counted ? mha::dry_tally(config, problem, true).steps : 0;
    if (config.format == mha::Format::Html) mha::check_lesson_page(config, problem.info, steps);
    const std::unique_ptr<mha::Report> report = make_report(config, steps);
    report->begin(problem.info);
    mha::Workspace workspace = mha::Workspace::dry();
    problem.options.workspace = &workspace;
    const auto start = std::chrono::steady_clock::now();
    const bool text = config.format == mha::Format::Text && !config.step;
    mha::TokenElision shown(*report, text ? &std::cout : nullptr);  // a decode's first and last
    if (config.backward) {
        mha::run_backward(config, problem, shown);
    } else {
        mha::run_pass(config, problem, shown);
    }
    const std::chrono::duration<double, std::milli> elapsed =
        std::chrono::steady_clock::now() - start;
    report->finish(mha::ForwardResult{}, elapsed.count());
    return 0;
}

int run(const std::vector<std::string>& args) {
    if (!args.empty() && args[0] == "quiz")
        return mha::run_quiz({args.begin() + 1, args.end()}, std::cin, isatty(STDIN_FILENO),
                             std::cout);
    if (!args.empty() && args[0] == "grade")
        return mha::run_grade({args.begin() + 1, args.end()}, std::cin, std::cout);
    if (!args.empty() && args[0] == "bench") return mha::run_bench({args.begin() + 1, args.end()});
    if (!args.empty() && args[0] == "train") return mha::run_train({args.begin() + 1, args.end()});
    if (!args.empty() && args[0] == "tokenize")
        return mha::run_tokenize({args.begin() + 1, args.end()}, std::cout);
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
    if (config.gradcheck) return mha::run_gradcheck(config, std::cout);
    if (config.shapes_only) return run_shapes_only(config);
    if (!config.compare_heads.empty()) {
        mha::run_compare(config, std::cout);
        return 0;
    }
    if (!config.checkpoint_path.empty()) {
        mha::run_checkpoint(config, reports_for(config), std::cout);
        return 0;
    }
    if (!config.model_path.empty()) {
        mha::run_model(config, reports_for(config), std::cout, std::cerr);
        return 0;
    }
    const mha::Problem problem = mha::build_problem(config);
    if (!config.save_path.empty()) mha::check_writable(config.save_path);
    if (!config.svg_path.empty()) mha::check_writable(config.svg_path);
    mha::check_svg_size(config, problem.info);
    const bool counted = config.step || config.format == mha::Format::Html;
    const std::size_t steps = counted ? mha::dry_tally(config, problem, true).steps : 0;
    if (config.format == mha::Format::Html) mha::check_lesson_page(config, problem.info, steps);
    if (problem.compute_first) {  // it may stop on overflow: find out before printing anything
        mha::Progress progress(problem.estimated_seconds, std::cerr, isatty(STDERR_FILENO));
        mha::NullTracer quiet;
        if (config.backward)
            mha::run_backward(config, problem, quiet);
        else
            mha::run_pass(config, problem, quiet);
    }
    if (config.text && mha::needs_replacing(*config.text)) {
        std::cerr << "mha: warning: --text holds control or bidirectional formatting characters "
                     "or invalid UTF-8; they are shown as U+FFFD\n";
    }

    const std::unique_ptr<mha::Report> report =
        make_report(config, steps,
                    config.format == mha::Format::Html ? mha::blocked_grids(problem)
                                                       : std::vector<std::vector<bool>>{});
    report->begin(problem.info);
    const auto start = std::chrono::steady_clock::now();
    mha::ScoreStats score_stats(mha::wants_summary(config));
    mha::TeeTracer tracer(*report, score_stats);
    // not between the lines of a trace on the same terminal (nor under --step's prompt)
    mha::Progress progress(problem.estimated_seconds, std::cerr,
                           isatty(STDERR_FILENO) && !(config.trace && isatty(STDOUT_FILENO)));
    const mha::ComputedRun computed =
        config.backward ? mha::run_backward(config, problem, tracer)
                        : mha::ComputedRun{mha::run_pass(config, problem, tracer), {}, {}};
    const mha::ForwardResult& result = computed.forward;
    progress.stop();
    const std::chrono::duration<double, std::milli> elapsed =
        std::chrono::steady_clock::now() - start;
    report->finish(result, elapsed.count());
    mha::check_stdout();
    mha::show_after_run(std::cout, config, problem, result, score_stats);
    mha::check_stdout();
    warn_masked_rows(result, config, problem.info, problem.mask_looks_keep);

    if (!config.save_path.empty()) save(config, problem, computed);
    if (args.empty()) {
        std::cout << "\nnext:\n"
                     "  mha --trace            every step: shape, strides, copies, multiply-adds\n"
                     "  mha --compare 1,4,16   the same layer with 1, 4 and 16 heads\n"
                     "  mha quiz               five questions on what the trace shows\n";
    }
    return 0;
}

// Every message goes through mha::escaped here, so an option value or a file name with a
// newline or an escape sequence in it still gives one printable line.
void print_error(const std::string& message) {
    std::cerr << "mha: error: " << mha::escaped(message) << "\n";
}

}  // namespace

int main(int argc, char** argv) {
    occupy_closed_descriptors();
    try {
        mha::check_kernel_choice();  // a bad MHA_KERNEL fails before any output
        const int status = run(std::vector<std::string>(argv + 1, argv + argc));
        mha::check_stdout();
        return status;
    } catch (const mha::StepQuit&) {
        try {
            mha::check_stdout();
            return 0;
        } catch (const mha::Error& error) {
            print_error(error.what());
        }
    } catch (const mha::Error& error) {
        print_error(error.what());
    } catch (const std::bad_alloc&) {
        print_error("out of memory; try smaller sizes or a lower --max-memory");
    } catch (const std::exception& error) {
        print_error(error.what());
    }
    return 2;
}
