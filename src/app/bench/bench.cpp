// mha bench. Each configuration is self-attention on seeded values, no mask,
// untraced, so forward() takes the streaming path as an untraced run does. --backward times
// forward_backward instead (core/backward/backward.h: the standard path, which the backward
// reads P from, and the gradients of every input and weight).
// Per configuration:
//   ms        median over --repeat runs with all threads (one warm-up run first), and the
//             fastest and slowest of them (min, max: the spread a shared machine gives), every
//             run taking its tensors from one workspace (core/tensor/workspace.h) and its
//             weights packed once for the size (pack_weights, core/pass/projection.h);
//             --backward: forward + backward, the weights packed once, fresh tensors
//   faults    page faults per timed run with all threads (getrusage's ru_minflt)
//   GFLOP/s   2 x multiply-adds / time
//   naive     reference_forward (core/reference.cpp, plain loops, 1 thread), run once
//             when it has at most naive_max_macs multiply-adds; above that its time
//             is estimated from the rate it reached on the largest size it ran; none
//             with --backward (there are no reference loops of the backward)
//   1 thread  median with one thread (its min and max in --json); scaling = 1-thread ms /
//             all-threads ms
//   peak      peak resident memory of `mha -b B -n N -d D -H h` run as a child
//   torch     (--compare-torch) src/app/bench/bench_torch.py through /usr/bin/python3, the
//             best by median (torch_choice.h) of nn.MultiheadAttention (module) and the same
//             maths from torch ops (composed), forward or (--backward) their autograd, each at
//             four settings (torch threads x OpenBLAS threads): eight in all, with its min and
//             max. The engines (mha on all threads, on one, each of PyTorch's) take turns,
//             round after round, or (--timing tight) run in alternating blocks back to back,
//             so that ms, 1 thread and torch are medians of runs taken side by side
//             (measure_with_torch)
// The table's heading is printed first and each size's row as soon as it is timed; the notes
// follow the last row. --json prints its one document at the end.

#include "app/bench/bench.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <fstream>
#include <iostream>
#include <memory>
#include <utility>

#include "app/bench/bench_checkpoint.h"
#include "app/bench/bench_train.h"
#include "app/bench/child_peak.h"
#include "app/bench/timing.h"
#include "app/bench/torch_choice.h"
#include "app/bench/torch_process.h"
#include "app/cli/cli.h"
#include "app/run/problem.h"
#include "core/backward/backward.h"
#include "core/error.h"
#include "core/kernels/kernels.h"
#include "core/pass/costs.h"
#include "core/pass/projection.h"
#include "core/reference.h"
#include "core/tensor/workspace.h"
#include "core/threads/parallel.h"
#include "io/dry.h"
#include "show/format.h"
#include "show/text_layout.h"

namespace mha {

namespace {

constexpr double naive_max_macs = 2e9;

struct BenchSize {
    std::size_t batch, seq_len, d_model, heads;
};

const std::vector<BenchSize> full_sizes = {{1, 128, 512, 8},    {8, 128, 512, 8},
                                           {1, 512, 768, 12},   {4, 512, 768, 12},
                                           {1, 2048, 1024, 16}, {1, 4096, 512, 8}};
const std::vector<BenchSize> quick_sizes = {{1, 8, 32, 4}, {2, 33, 64, 4}};

struct BenchOptions {
    std::vector<BenchSize> sizes;    // --sizes; empty: full_sizes (or quick_sizes)
    std::vector<std::size_t> heads;  // --heads: every size at each of these h
    std::size_t repeat = 5;
    std::size_t threads = 0;  // 0: the hardware's
    bool quick = false;
    bool json = false;
    bool compare_torch = false;
    bool backward = false;  // time forward + backward
    bool train = false;     // time mha train's step instead (app/bench/bench_train.h)
    Timing timing = Timing::Turns;  // how compared engines share the machine
    std::string checkpoint;         // time a checkpoint folder's forward (bench_checkpoint.h)
    std::vector<std::size_t> lengths;  // -n: the checkpoint's prompt lengths
    bool help = false;
};

struct Row {
    BenchSize size;
    double macs = 0;
    Spread ms, ms_one;
    double naive_ms = 0;
    double faults = 0;          // page faults per timed run, all threads
    TorchBest torch;  // PyTorch's best form and setting (--compare-torch)
    bool naive_estimated = false;
    double peak_mib = 0;
};

// "1x128x512x8,4x512x768x12": B x N x d_model x h, each from 1 to 2^20, h dividing d_model.
std::vector<BenchSize> parse_sizes(const Arg& arg) {
    std::vector<BenchSize> sizes;
    for (const std::string& item : split(arg.text, ',')) {
        const std::string expected =
            arg.option + " expects sizes like 1x128x512x8 (B x N x d_model x h), got '" + item +
            "'";
        const std::vector<std::string> parts = split(item, 'x');
        if (parts.size() != 4) throw Error(expected);
        std::vector<std::size_t> numbers;
        for (const std::string& part : parts) {
            try {
                numbers.push_back(parse_count({arg.option, part}, std::size_t(1) << 20));
            } catch (const Error&) {
                throw Error(expected);
            }
        }
        if (numbers[2] % numbers[3] != 0) {
            throw Error(arg.option + " " + item + ": h = " + std::to_string(numbers[3]) +
                        " does not divide d_model = " + std::to_string(numbers[2]));
        }
        sizes.push_back({numbers[0], numbers[1], numbers[2], numbers[3]});
    }
    return sizes;
}

// The sizes to time: --sizes or the built-in ones, each at every --heads count.
std::vector<BenchSize> sizes_to_time(const BenchOptions& o) {
    const std::vector<BenchSize>& base = !o.sizes.empty() ? o.sizes
                                         : o.quick        ? quick_sizes
                                                          : full_sizes;
    if (o.heads.empty()) return base;
    std::vector<BenchSize> sizes;
    for (const BenchSize& size : base) {
        for (const std::size_t heads : o.heads) {
            if (size.d_model % heads != 0) {
                throw Error("bench: --heads " + std::to_string(heads) +
                            " does not divide d_model " + std::to_string(size.d_model) +
                            " of the size " + std::to_string(size.batch) + "x" +
                            std::to_string(size.seq_len) + "x" + std::to_string(size.d_model) +
                            "x" + std::to_string(size.heads));
            }
            sizes.push_back({size.batch, size.seq_len, size.d_model, heads});
        }
    }
    return sizes;
}

// mha bench's options in --help order (adding one: see mha_table in app/cli/cli.cpp).
const std::vector<Option<BenchOptions>>& bench_table() {
    static const std::vector<Option<BenchOptions>> table = {
        section<BenchOptions>(""),
        {{"--repeat", 0, "R", "timed runs per size, after one warm-up (default 5)"},
         [](BenchOptions& o, const Arg& a) { o.repeat = parse_count(a, 1000); }},
        {{"--threads", 0, "T", "threads for the \"all threads\" column (default: the\nhardware's)"},
         [](BenchOptions& o, const Arg& a) { o.threads = parse_count(a, max_threads); }},
        {{"--sizes", 0, "BxNxDxH,...",
          "the sizes to time instead of the six, e.g.\n"
          "1x128x512x8,4x512x768x12 (B x N x d_model x h)"},
         [](BenchOptions& o, const Arg& a) { o.sizes = parse_sizes(a); }},
        {{"--heads", 0, "H1,H2,...",
          "time every size at each head count (same threads,\n"
          "same d_model), e.g. --heads 1,8,16"},
         [](BenchOptions& o, const Arg& a) { o.heads = parse_count_list(a, 4096); }},
        {{"--quick", 0, "", "two tiny sizes, for a smoke test"},
         [](BenchOptions& o, const Arg&) { o.quick = true; }},
        {{"--json", 0, "", "one JSON document instead of the table"},
         [](BenchOptions& o, const Arg&) { o.json = true; }},
        {{"--backward", 0, "",
          "time the forward and the backward of L = sum(output *\n"
          "dO), every gradient, on the standard path: ms is then\n"
          "the forward + backward median (no naive column)"},
         [](BenchOptions& o, const Arg&) { o.backward = true; }},
        {{"--train", 0, "",
          "time a training step of mha train's default recipe\n"
          "(forward, backward, clipping, AdamW) on all threads and\n"
          "on 1; with --quick a tiny model; with --compare-torch\n"
          "PyTorch training the same model (its modules, and its\n"
          "attention composed) at each of the four settings"},
         [](BenchOptions& o, const Arg&) { o.train = true; }},
        {{"--compare-torch", 0, "",
          "also time PyTorch through /usr/bin/python3 and\n"
          "src/app/bench/bench_torch.py (needs PyTorch, on a BLAS\n"
          "other than the reference one, e.g. OpenBLAS) at\n"
          "its best: nn.MultiheadAttention (module) and the same\n"
          "maths from F.linear, matmul and softmax (composed,\n"
          "checked to agree first), each at torch threads 1, 2 x\n"
          "OpenBLAS threads 1, 2 in a process kept alive,\n"
          "OPENBLAS_CORETYPE unset: the fastest of the eight, named\n"
          "in the table; with --backward their autograd"},
         [](BenchOptions& o, const Arg&) { o.compare_torch = true; }},
        {{"--timing", 0, "turns|tight",
          "how compared engines share the machine: turns (the\n"
          "default), round after round, a turn being untimed runs\n"
          "for 25 ms then a timed one (a run of 0.25 s or more\n"
          "timed as it comes), a 0.15 s pause after each; tight,\n"
          "each engine's runs back to back after a warm-up, the\n"
          "engines alternating in up to three blocks, a 0.15 s\n"
          "pause before each"},
         [](BenchOptions& o, const Arg& a) { o.timing = parse_timing(a); }},
        {{"--checkpoint", 0, "DIR",
          "time the whole forward to logits of a Hugging Face\n"
          "model folder (as mha --checkpoint runs it) on random\n"
          "tokens, loading excluded and shown beside it, with the\n"
          "peak memory; with --compare-torch PyTorch runs the same\n"
          "maths eagerly in float32 on the same weights"},
         [](BenchOptions& o, const Arg& a) { o.checkpoint = parse_path(a); }},
        {{"--seq-len", 'n', "N1,N2,...",
          "with --checkpoint: the prompt lengths (default 128,1024)"},
         [](BenchOptions& o, const Arg& a) { o.lengths = parse_count_list(a, 1 << 20); }},
        {{"--help", 'h', "", "this help"}, [](BenchOptions& o, const Arg&) { o.help = true; }},
    };
    return table;
}

Config config_of(const BenchSize& s, bool backward) {
    Config c;
    c.batch = s.batch;
    c.seq_len = s.seq_len;
    c.d_model = s.d_model;
    c.heads = s.heads;
    c.backward = backward;
    if (backward) c.attention = AttentionPath::Standard;  // the backward that reads P
    c.max_time.reset();                                   // bench chooses its sizes itself
    return c;
}

Sizes sizes_of(const BenchSize& s) {
    return {s.batch,   s.seq_len, s.seq_len, s.d_model,          s.d_model,
            s.d_model, s.heads,   s.heads,   s.d_model / s.heads};
}

// The forward's multiply-adds, or with `backward` the forward's and backward's as a dry run
// of them counts them.
double multiply_adds(const BenchSize& s, bool backward) {
    const Sizes sizes = sizes_of(s);
    if (!backward) return double(forward_macs(sizes));
    Workspace workspace = Workspace::dry();
    ForwardOptions options;
    options.heads = s.heads;
    options.workspace = &workspace;
    Tally tally;
    forward_backward(dry_weights(sizes, true, false), dry_inputs(sizes, true), {}, options,
                     Form::Packed, Tensor::shape_only({s.batch, s.seq_len, s.d_model}), tally);
    return double(tally.total_macs());
}

// The page faults (minor and major) this process has taken so far.
double page_faults() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return double(usage.ru_minflt + usage.ru_majflt);
}

// The spread of `repeat` runs' times after a warm-up; faults = page faults per timed run.
template <typename Run>
Spread time_runs(std::size_t repeat, Run run, double& faults) {
    std::vector<double> times;
    run();  // warm-up: page faults, packing buffers, worker threads
    const double faults_before = page_faults();
    for (std::size_t r = 0; r < repeat; ++r) times.push_back(time_ms(run));
    faults = (page_faults() - faults_before) / double(repeat);
    return spread_of(std::move(times));
}

// Peak resident memory (MiB) of this binary run untraced on the size (with `backward`:
// --backward --attention standard, what bench --backward times), as a child.
double attention_peak_mib(const BenchSize& s, std::size_t threads, bool backward) {
    std::vector<std::string> args = {"mha",
                                     "-b",
                                     std::to_string(s.batch),
                                     "-n",
                                     std::to_string(s.seq_len),
                                     "-d",
                                     std::to_string(s.d_model),
                                     "-H",
                                     std::to_string(s.heads),
                                     "-t",
                                     std::to_string(threads),
                                     "--max-time",
                                     "off"};
    if (backward) args.insert(args.end(), {"--backward", "--attention", "standard"});
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    return child_peak_mib([&] {
        const int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        execv("/proc/self/exe", argv.data());
        _exit(127);
    });
}

// One size's pass (forward, or forward + backward) on seeded values, ready to run again and
// again: every run takes its tensors from one workspace (the memory of the run before) and
// its weights packed once.
class MhaPass {
public:
    MhaPass(const BenchSize& size, bool backward)
        : problem_(build_problem(config_of(size, backward))),
          packed_(pack_weights(problem_.weights)),
          backward_(backward) {
        problem_.options.workspace = &workspace_;
        problem_.options.packed = &packed_;
    }
    MhaPass(const MhaPass&) = delete;
    MhaPass& operator=(const MhaPass&) = delete;

    double run_ms(std::size_t threads) {
        Problem& p = problem_;
        p.options.threads = threads;
        return time_ms([&] {
            if (backward_) {
                forward_backward(p.weights, p.inputs, p.masks, p.options, Form::Packed,
                                 p.grad_output, none_);
            } else {
                forward(p.weights, p.inputs, p.masks, p.options, none_);
            }
        });
    }

    // The reference loops' forward (plain loops, 1 thread), ms.
    double reference_ms() const {
        const Problem& p = problem_;
        return time_ms([&] { reference_forward(p.weights, p.inputs, p.masks, p.options); });
    }

private:
    Problem problem_;
    Workspace workspace_;
    PackedWeights packed_;
    NullTracer none_;
    bool backward_;
};

// row's naive time: the reference loops run once when the size has at most naive_max_macs
// multiply-adds (or none has run yet), else estimated from the rate of the last that ran.
void time_naive(Row& row, const MhaPass& pass, double& naive_rate) {
    if (row.macs <= naive_max_macs || naive_rate == 0) {
        row.naive_ms = pass.reference_ms();
        naive_rate = row.macs / row.naive_ms;
    } else {
        row.naive_ms = row.macs / naive_rate;
        row.naive_estimated = true;
    }
}

// A row of `size`, before its times.
Row row_of(const BenchSize& size, const BenchOptions& o, double peak_mib) {
    Row row;
    row.size = size;
    row.macs = multiply_adds(size, o.backward);
    row.peak_mib = peak_mib;
    return row;
}

Row measure(const BenchSize& size, const BenchOptions& o, std::size_t threads, double peak_mib,
            double& naive_rate) {
    Row row = row_of(size, o, peak_mib);
    MhaPass pass(size, o.backward);
    row.ms = time_runs(
        o.repeat, [&] { pass.run_ms(threads); }, row.faults);
    double faults_one = 0;
    row.ms_one = time_runs(
        o.repeat, [&] { pass.run_ms(1); }, faults_one);
    if (!o.backward) time_naive(row, pass, naive_rate);  // no reference loops of the backward
    return row;
}

// measure with --compare-torch: the engines (mha on all threads, mha on one, then each PyTorch
// process's forms, module and composed) share the machine as --timing says (time_engines), so
// that a load that comes and goes falls on all alike. The row takes PyTorch's form and setting
// with the smallest median.
Row measure_with_torch(const BenchSize& size, const BenchOptions& o, std::size_t threads,
                       double peak_mib, double& naive_rate,
                       std::vector<std::unique_ptr<TorchProcess>>& torch) {
    Row row = row_of(size, o, peak_mib);
    const std::string text = std::to_string(size.batch) + "," + std::to_string(size.seq_len) + "," +
                             std::to_string(size.d_model) + "," + std::to_string(size.heads);
    MhaPass pass(size, o.backward);
    pass.run_ms(threads);  // warm-up: the pool's threads, the first touch of the workspace
    double faults = 0, runs = 0;
    std::vector<std::function<double()>> engines = {
        [&] {  // a run on all threads, its page faults counted
            const double before = page_faults();
            const double ms = pass.run_ms(threads);
            faults += page_faults() - before;
            ++runs;
            return ms;
        },
        [&] { return pass.run_ms(1); }};
    std::vector<TorchCandidate> candidates;
    for (const auto& process : torch) {
        for (const std::string& form : process->load(text)) {
            candidates.push_back({process->setting(), form, {}});
            engines.push_back([&process, form] { return process->run_ms(form); });
        }
    }
    const std::vector<std::vector<double>> times =
        time_engines(engines, o.repeat, o.timing, o.timing == Timing::Turns || !torch.empty());
    row.ms = spread_of(times[0]);
    row.ms_one = spread_of(times[1]);
    row.faults = faults / runs;
    for (std::size_t i = 0; i < candidates.size(); ++i) candidates[i].times = times[2 + i];
    row.torch = fastest_torch(candidates);
    if (!o.backward) time_naive(row, pass, naive_rate);
    return row;
}

// The table's heading and its column names, printed before the first size is timed.
void print_heading(const BenchOptions& o, std::size_t threads) {
    std::cout << "mha bench" << (o.backward ? " --backward" : "")
              << ": self-attention, no mask, untraced"
              << (o.backward ? ", forward + backward (standard path)" : " (streaming path)")
              << "; median, min and max of " << o.repeat << " run(s)\nkernels "
              << kernel_variant_name() << " (tile " << kernel_tile_name()
              << "; MHA_KERNEL=name forces another), " << threads
              << " thread(s); naive = reference loops, 1 thread (~ estimated"
              << (o.backward ? "; none of the backward" : "") << ")\n\n";
    std::cout << "  B     N  d_model   h       ms   min ms   max ms  GFLOP/s    naive ms  speed-up"
                 "  1-thr ms  scaling  peak MiB  faults";
    if (o.compare_torch)
        std::cout << torch_header;
    std::cout << std::endl;  // shown now: the first row may be minutes away
}

// One size's row, printed (and flushed) as soon as the size is timed.
void print_row(const Row& r, const BenchOptions& o) {
    std::cout << padded_left(std::to_string(r.size.batch), 3)
              << padded_left(std::to_string(r.size.seq_len), 6)
              << padded_left(std::to_string(r.size.d_model), 9)
              << padded_left(std::to_string(r.size.heads), 4)
              << padded_left(fixed(r.ms.median, 2), 9) << padded_left(fixed(r.ms.min, 2), 9)
              << padded_left(fixed(r.ms.max, 2), 9)
              << padded_left(fixed(gflops(r.macs, r.ms.median), 1), 9)
              << padded_left(
                     o.backward ? "-" : (r.naive_estimated ? "~" : "") + fixed(r.naive_ms, 1), 12)
              << padded_left(o.backward ? "-" : fixed(r.naive_ms / r.ms.median, 1) + "x", 10)
              << padded_left(fixed(r.ms_one.median, 2), 10)
              << padded_left(fixed(r.ms_one.median / r.ms.median, 2) + "x", 9)
              << padded_left(fixed(r.peak_mib, 1), 10) << padded_left(fixed(r.faults, 0), 8);
    if (o.compare_torch) std::cout << torch_cells(r.torch, r.ms.median);
    std::cout << std::endl;
}

// The notes under the table, once every size is timed.
void print_notes(const BenchOptions& o, std::size_t threads) {
    if (!o.heads.empty())
        std::cout << "\n--heads: every row ran on " << threads
                  << " thread(s), shared over its B·h (batch, head) units;\na row with fewer "
                     "units than threads leaves some idle\n";
    if (o.compare_torch)
        std::cout << "\ntorch ms: PyTorch's best median (t min ms, t max ms: its fastest and slowest "
                     "run) of\nnn.MultiheadAttention (module) and the same maths from F.linear, "
                     "matmul and softmax\n(composed)"
                  << (o.backward ? ", forward + backward by autograd," : "")
                  << " at torch threads 1, 2 x OpenBLAS threads 1, 2 (t/blas),\neach a process kept "
                     "alive, with OPENBLAS_CORETYPE unset so OpenBLAS picks its own kernels;\nvs "
                     "torch: torch ms / mha ms, medians (above 1 = mha is faster). "
                  << timing_note(o.timing) << "\n";
}

void print_json(const std::vector<Row>& rows, const BenchOptions& o, std::size_t threads) {
    std::cout << "{\"tool\":\"mha bench\",\"threads\":" << threads << ",\"repeat\":" << o.repeat
              << ",\"kernel\":\"" << kernel_variant_name() << "\",\"kernel_tile\":\""
              << kernel_tile_name() << "\",\"path\":\"" << (o.backward ? "standard" : "streaming")
              << "\",\"backward\":" << (o.backward ? "true" : "false") << ",\"timing\":\""
              << timing_name(o.timing) << "\",\"configs\":[";
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const Row& r = rows[i];
        std::cout << (i ? ",\n" : "\n") << "{\"B\":" << r.size.batch << ",\"N\":" << r.size.seq_len
                  << ",\"d_model\":" << r.size.d_model << ",\"h\":" << r.size.heads
                  << ",\"macs\":" << fixed(r.macs, 0) << ",\"ms\":" << fixed(r.ms.median, 4)
                  << ",\"ms_min\":" << fixed(r.ms.min, 4) << ",\"ms_max\":" << fixed(r.ms.max, 4)
                  << ",\"gflops\":" << fixed(gflops(r.macs, r.ms.median), 2)
                  << ",\"naive_ms\":" << (o.backward ? "null" : fixed(r.naive_ms, 2))
                  << ",\"naive_estimated\":" << (r.naive_estimated ? "true" : "false")
                  << ",\"speedup\":" << (o.backward ? "null" : fixed(r.naive_ms / r.ms.median, 2))
                  << ",\"ms_1_thread\":" << fixed(r.ms_one.median, 4)
                  << ",\"ms_1_thread_min\":" << fixed(r.ms_one.min, 4)
                  << ",\"ms_1_thread_max\":" << fixed(r.ms_one.max, 4)
                  << ",\"scaling\":" << fixed(r.ms_one.median / r.ms.median, 3)
                  << ",\"peak_mib\":" << fixed(r.peak_mib, 1)
                  << ",\"faults_per_run\":" << fixed(r.faults, 1);
        if (o.compare_torch)
            std::cout << torch_json(r.torch, r.ms.median);
        std::cout << "}";
    }
    std::cout << "\n]}\n";
}

// The cross-option rules: what --train, --checkpoint, --seq-len and --timing take.
void check_options(const BenchOptions& o, const std::vector<std::string>& given) {
    const auto was_given = [&](const char* name) {
        return std::find(given.begin(), given.end(), name) != given.end();
    };
    if (o.train && (!o.sizes.empty() || !o.heads.empty() || o.backward))
        throw Error("bench --train times mha train's one size; it takes no --sizes, --heads or "
                    "--backward");
    if (!o.checkpoint.empty() &&
        (o.train || o.backward || o.quick || !o.sizes.empty() || !o.heads.empty()))
        throw Error("bench --checkpoint times the folder's forward at -n lengths; it takes no "
                    "--train, --backward, --quick, --sizes or --heads");
    if (was_given("--seq-len") && o.checkpoint.empty())
        throw Error("bench -n gives the prompt lengths of --checkpoint DIR; give --sizes for "
                    "attention alone");
    if (was_given("--timing") && !o.compare_torch && !o.train)
        throw Error("bench --timing says how engines share the machine: give it with "
                    "--compare-torch or --train");
}

}  // namespace

const CommandInfo& bench_command() {
    static const CommandInfo command =
        command_info<BenchOptions>("bench", R"(Usage: mha bench [options]
Times the forward pass (self-attention, no mask, untraced) on six sizes from
(B, N, d_model, h) = (1, 128, 512, 8) to (1, 4096, 512, 8): median ms and
the spread (min, max), GFLOP/s, speed-up over the reference loops, 1 thread
against all, peak memory.
With --backward every ms is the forward + backward median, and GFLOP/s counts
both passes' multiply-adds. With --train it times one training step of mha
train's default recipe instead, and --repeat counts steps. With --checkpoint
DIR it times a model folder's whole forward to logits at N = 128 and 1024.
)",
                                   R"(Examples:
  mha bench --quick                         a smoke test
  mha bench --sizes 1x512x512x8 --heads 1,8,16
                                            one size at 1, 8 and 16 heads
  mha bench --backward --quick              forward + backward, a smoke test
  mha bench --train --quick                 a training step, a smoke test
)",
                                   "", bench_table());
    return command;
}

int run_bench(const std::vector<std::string>& args) {
    BenchOptions o;
    const std::vector<std::string> given = apply_options(bench_command(), bench_table(), args, o);
    if (o.help) {
        std::cout << help_text(bench_command());
        return 0;
    }
    check_options(o, given);
    if (o.compare_torch && o.checkpoint.empty()) check_torch_side();  // --checkpoint: its own
    const std::size_t threads = o.threads ? o.threads : hardware_threads();
    if (o.train) {
        run_train_bench({o.repeat, threads, o.quick, o.compare_torch, o.json, o.timing});
        return 0;
    }
    if (!o.checkpoint.empty()) {
        CheckpointBenchOptions c;
        c.dir = o.checkpoint;
        if (!o.lengths.empty()) c.lengths = o.lengths;
        c.repeat = o.repeat;
        c.threads = threads;
        c.compare_torch = o.compare_torch;
        c.json = o.json;
        c.timing = o.timing;
        run_checkpoint_bench(c);
        return 0;
    }
    const std::vector<BenchSize> sizes = sizes_to_time(o);
    if (!o.json) print_heading(o, threads);  // each row follows when its size is timed
    std::vector<Row> rows;
    double naive_rate = 0;
    // every child's peak first, while this process holds little: a child's peak counts what
    // it inherits from its parent at the fork (and the heap keeps some of what earlier sizes
    // freed)
    std::vector<double> peaks;
    for (const BenchSize& size : sizes) peaks.push_back(attention_peak_mib(size, threads, o.backward));
    std::vector<std::unique_ptr<TorchProcess>> torch;
    if (o.compare_torch)  // one process a setting, kept for every size
        torch = start_torch(o.backward ? TorchProcess::Mode::Backward
                                       : TorchProcess::Mode::Forward);
    for (std::size_t i = 0; i < sizes.size(); ++i) {
        rows.push_back(o.compare_torch
                           ? measure_with_torch(sizes[i], o, threads, peaks[i], naive_rate, torch)
                           : measure(sizes[i], o, threads, peaks[i], naive_rate));
        if (!o.json) print_row(rows.back(), o);
    }
    if (o.json)
        print_json(rows, o, threads);
    else
        print_notes(o, threads);
    return 0;
}

}  // namespace mha
