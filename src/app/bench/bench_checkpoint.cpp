// mha bench --checkpoint DIR. The folder is opened and every layer and the LM head read into
// memory once (the load, timed), and their weights packed once for the kernels (pack_model,
// timed apart), then each length's forward to logits runs on random tokens from that memory,
// as mha --checkpoint computes it (core/forms/model.h: every layer on the standard path, the
// traced layer's attention weights kept, the others' freed), untraced, every run of a length
// taking its tensors from one workspace. Each length's peak resident memory is that of a child
// process that loads the folder and runs the forward once (packing nothing: one forward gains
// nothing from it), forked before this process starts any thread. With --compare-torch,
// src/app/bench/bench_torch.py --checkpoint DIR runs the same maths eagerly in float32 on the
// same weights and tokens, at torch threads 1, 2 x OpenBLAS threads 1, 2, as modules
// (nn.MultiheadAttention, nn.LayerNorm, nn.Linear) and composed from torch ops, and the engines
// share the machine as --timing says.

#include "app/bench/bench_checkpoint.h"

#include <sys/stat.h>

#include <functional>
#include <iostream>
#include <memory>

#include "app/bench/child_peak.h"
#include "app/bench/torch_choice.h"
#include "app/bench/torch_process.h"
#include "core/error.h"
#include "core/forms/model.h"
#include "core/kernels/kernels.h"
#include "core/tensor/workspace.h"
#include "io/checkpoint/load.h"
#include "io/init.h"
#include "io/printable.h"
#include "show/format.h"
#include "show/text_layout.h"

namespace mha {

namespace {

namespace ck = checkpoint;

// The folder's weights in memory: every layer and the whole LM head, and (for the timed runs)
// their copy packed for the kernels.
struct CheckpointWeights {
    std::vector<ModelLayer> layers;
    Tensor head;  // (V, d_model)
    PackedModel packed;
};

struct CheckpointRow {
    std::size_t n = 0;
    double macs = 0;
    double peak_mib = 0;
    Spread ms;
    TorchBest torch;  // PyTorch's best form and setting (--compare-torch)
};

void check_folder(const std::string& dir) {
    struct stat info {};
    if (stat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode))
        throw Error("bench --checkpoint expects a model folder (config.json and .safetensors), "
                    "got '" + dir + "', which is not a folder");
}

void check_lengths(const ck::Config& c, const std::vector<std::size_t>& lengths) {
    for (const std::size_t n : lengths) {
        if (n > c.max_positions) {
            throw Error("bench --checkpoint: -n " + std::to_string(n) + " is more than " +
                        sanitized(c.file) + " allows (" + std::to_string(c.max_positions) +
                        " positions)");
        }
    }
}

CheckpointWeights load_weights(const ck::Checkpoint& checkpoint) {
    const Ledger unbounded;  // the bench reads the whole model; it has no --max-memory
    CheckpointWeights w;
    for (std::size_t l = 0; l < checkpoint.config.layers; ++l)
        w.layers.push_back(ck::read_layer(checkpoint, l, unbounded));
    w.head = checkpoint.folder.read_row_range(checkpoint.names.head, 0,
                                              checkpoint.config.vocab_size, unbounded);
    return w;
}

// The model to run on `tokens`: their embedding rows read, every layer and the head from `w`.
ck::Prompt model_for(const ck::Checkpoint& checkpoint, const CheckpointWeights& w,
                     const std::vector<std::size_t>& tokens) {
    Ledger unbounded;
    ck::Prompt prompt = ck::read_prompt(checkpoint, tokens, unbounded);
    prompt.model.layers = w.layers;
    prompt.model.head_weight = w.head;
    return prompt;
}

// One forward to logits as mha --checkpoint runs it untraced (layer 0's attention weights kept,
// the others freed), the weights packed once when `packed` is given, its tensors from
// `workspace` when given.
double forward_ms(const ck::Prompt& prompt, std::size_t threads, const PackedModel* packed,
                  Workspace* workspace) {
    NullTracer none;
    ModelPass pass;
    pass.every_layer_weights = false;
    pass.packed = packed;
    pass.workspace = workspace;
    return time_ms([&] { forward_model(prompt.model, prompt.rows, 0, threads, none, pass); });
}

// The forward's multiply-adds as dry runs count them: the model's (embedding, layer 0 step by
// step, the head) and every other layer's block.
double forward_macs_of(const ck::Config& c, std::size_t n) {
    const ck::Prompt dry = ck::dry_prompt(c, n);
    Tally whole;
    forward_model(dry.model, ck::dry_source(c), dry.rows, 0, 1, whole);
    double macs = double(whole.total_macs());
    for (std::size_t l = 1; l < c.layers; ++l) {
        const ModelLayer layer = ck::dry_layer(c, l);
        Workspace workspace = Workspace::dry();
        const Tensor x = Tensor::shape_only({1, n, c.hidden_size});
        Tally one;
        PassTrace trace(one);
        forward_block(layer.attention, layer.block, BlockKind::Pre, {x, x, x}, layer_masks(layer),
                      layer_options(layer, 1, &workspace), trace);
        macs += double(one.total_macs());
    }
    return macs;
}

// Peak resident MiB of a child process that loads the folder and runs one forward of n tokens.
double load_and_forward_peak_mib(const CheckpointBenchOptions& o, std::size_t n) {
    return child_peak_mib([&] {
        const ck::Checkpoint checkpoint = ck::open_checkpoint(o.dir, Ledger());
        const CheckpointWeights w = load_weights(checkpoint);
        forward_ms(model_for(checkpoint, w, bench_tokens(n, checkpoint.config.vocab_size)),
                   o.threads, nullptr, nullptr);
    });
}

// One length: mha's forward (and PyTorch's forms) timed as --timing says.
void time_row(CheckpointRow& row, const ck::Prompt& prompt, const PackedModel& packed,
              const CheckpointBenchOptions& o, std::vector<std::unique_ptr<TorchProcess>>& torch,
              const std::vector<std::size_t>& tokens) {
    Workspace workspace;
    const auto run = [&] { return forward_ms(prompt, o.threads, &packed, &workspace); };
    run();  // warm-up: the pool's threads, the first touch of memory
    std::vector<std::function<double()>> engines = {run};
    std::vector<TorchCandidate> candidates;
    for (const auto& process : torch) {
        for (const std::string& form : process->load(joined(tokens))) {
            candidates.push_back({process->setting(), form, {}});
            engines.push_back([&process, form] { return process->run_ms(form); });
        }
    }
    const std::vector<std::vector<double>> times =
        time_engines(engines, o.repeat, o.timing, !torch.empty());
    row.ms = spread_of(times[0]);
    if (torch.empty()) return;
    for (std::size_t i = 0; i < candidates.size(); ++i) candidates[i].times = times[1 + i];
    row.torch = fastest_torch(candidates);
}

// The heading (with the load's and the packing's times) and the column names, before the first
// length is timed.
void print_heading(const ck::Config& c, double load_ms, double pack_ms,
                   const CheckpointBenchOptions& o) {
    std::cout << "mha bench --checkpoint " << sanitized(o.dir) << " (" << sanitized(c.model_type)
              << ", " << c.layers << " layers, d_model " << c.hidden_size << ", h " << c.heads
              << ", vocabulary " << c.vocab_size << "):\nthe whole forward to logits on random "
              << "tokens, untraced, weights in memory; median, min and max of " << o.repeat
              << " run(s),\n"
              << o.threads << " thread(s), kernels " << kernel_variant_name()
              << "; load (config, headers, every layer and the LM head into memory, float32): "
              << fixed(load_ms, 0)
              << " ms;\nthe weights packed once for the kernels (a second copy, "
              << "held by the timed runs alone): " << fixed(pack_ms, 0) << " ms\n\n";
    std::cout << "     N        ms    min ms    max ms  GFLOP/s  peak MiB";
    if (o.compare_torch) std::cout << torch_header;
    std::cout << std::endl;  // shown now: the first row may be minutes away
}

// One length's row, printed (and flushed) as soon as it is timed.
void print_row(const CheckpointRow& r, const CheckpointBenchOptions& o) {
    std::cout << padded_left(std::to_string(r.n), 6) << padded_left(fixed(r.ms.median, 2), 10)
              << padded_left(fixed(r.ms.min, 2), 10) << padded_left(fixed(r.ms.max, 2), 10)
              << padded_left(fixed(gflops(r.macs, r.ms.median), 1), 9)
              << padded_left(fixed(r.peak_mib, 1), 10);
    if (o.compare_torch) std::cout << torch_cells(r.torch, r.ms.median);
    std::cout << std::endl;
}

// The notes under the table, once every length is timed.
void print_notes(const CheckpointBenchOptions& o) {
    std::cout << "\npeak MiB: a child process's peak resident memory, loading the folder and "
                 "running one forward;\nGFLOP/s: 2 x the multiply-adds the trace counts / ms\n";
    if (o.compare_torch)
        std::cout << "torch ms: PyTorch's best median of the same maths eagerly in float32 on the "
                     "same weights and\ntokens (src/app/bench/bench_torch.py --checkpoint), as "
                     "modules (nn.MultiheadAttention,\nnn.LayerNorm, nn.Linear: module) and from "
                     "F.linear, matmul and softmax (composed), at torch\nthreads 1, 2 x OpenBLAS "
                     "threads 1, 2 (t/blas), OPENBLAS_CORETYPE unset; vs torch: torch ms /\nmha "
                     "ms (above 1 = mha is faster). "
                  << timing_note(o.timing) << "\n";
}

void print_json(const std::vector<CheckpointRow>& rows, const ck::Config& c, double load_ms,
                const CheckpointBenchOptions& o) {
    std::cout << "{\"tool\":\"mha bench\",\"checkpoint\":true,\"layers\":" << c.layers
              << ",\"d_model\":" << c.hidden_size << ",\"heads\":" << c.heads
              << ",\"vocab\":" << c.vocab_size << ",\"threads\":" << o.threads << ",\"repeat\":" << o.repeat << ",\"timing\":\""
              << timing_name(o.timing) << "\",\"kernel\":\"" << kernel_variant_name()
              << "\",\"load_ms\":" << fixed(load_ms, 1) << ",\"lengths\":[";
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const CheckpointRow& r = rows[i];
        std::cout << (i ? ",\n" : "\n") << "{\"N\":" << r.n << ",\"macs\":" << fixed(r.macs, 0)
                  << ",\"ms\":" << fixed(r.ms.median, 4) << ",\"ms_min\":" << fixed(r.ms.min, 4)
                  << ",\"ms_max\":" << fixed(r.ms.max, 4)
                  << ",\"gflops\":" << fixed(gflops(r.macs, r.ms.median), 2)
                  << ",\"peak_mib\":" << fixed(r.peak_mib, 1);
        if (o.compare_torch)
            std::cout << torch_json(r.torch, r.ms.median);
        std::cout << "}";
    }
    std::cout << "\n]}\n";
}

}  // namespace

std::vector<std::size_t> bench_tokens(std::size_t n, std::size_t vocab) {
    Random random(0, 0);
    std::vector<std::size_t> ids(n);
    for (std::size_t& id : ids) id = std::size_t(random.below(vocab));
    return ids;
}

void run_checkpoint_bench(const CheckpointBenchOptions& o) {
    check_folder(o.dir);
    std::unique_ptr<ck::Checkpoint> checkpoint;
    double load_ms = time_ms(
        [&] { checkpoint = std::make_unique<ck::Checkpoint>(ck::open_checkpoint(o.dir, Ledger())); });
    const ck::Config& c = checkpoint->config;
    check_lengths(c, o.lengths);
    if (o.compare_torch && c.family != ck::Family::Gpt2)
        throw Error("bench --checkpoint --compare-torch runs GPT-2 folders only; " +
                    sanitized(c.file) + " gives model_type '" + sanitized(c.model_type) + "'");
    if (o.compare_torch) check_torch_side();
    std::vector<CheckpointRow> rows;
    for (const std::size_t n : o.lengths) {  // peaks first: no thread has started yet
        CheckpointRow row;
        row.n = n;
        row.macs = forward_macs_of(c, n);
        row.peak_mib = load_and_forward_peak_mib(o, n);
        rows.push_back(row);
    }
    CheckpointWeights weights;
    load_ms += time_ms([&] { weights = load_weights(*checkpoint); });
    const double pack_ms =
        time_ms([&] { weights.packed = pack_model(weights.layers, weights.head); });
    std::vector<std::unique_ptr<TorchProcess>> torch;
    if (o.compare_torch) torch = start_torch(TorchProcess::Mode::Checkpoint, o.dir);
    if (!o.json) print_heading(c, load_ms, pack_ms, o);  // each row follows when it is timed
    for (CheckpointRow& row : rows) {
        const std::vector<std::size_t> tokens = bench_tokens(row.n, c.vocab_size);
        time_row(row, model_for(*checkpoint, weights, tokens), weights.packed, o, torch, tokens);
        if (!o.json) print_row(row, o);
    }
    if (o.json)
        print_json(rows, c, load_ms, o);
    else
        print_notes(o);
}

}  // namespace mha
