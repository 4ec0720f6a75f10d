// mha bench --train. The engines take turns, round after round (or with --timing tight run their
// steps back to back in alternating blocks, app/bench/timing.h): mha on all its threads, mha on one,
// and with --compare-torch PyTorch at torch threads 1, 2 x OpenBLAS threads 1, 2, each a
// src/app/bench/bench_torch.py --train process that stays alive and takes a step whenever it is
// told to (app/bench/torch_process.h), with a pause after every turn. So a load that comes and goes
// on a shared machine falls on every engine alike, and the ratio of medians taken in one run means
// something. A turn (turn_ms, app/bench/timing.h) is two steps back to back, the second timed, as a
// training run's steps follow each other: the first step after the pause wakes the engine's threads
// and brings its tensors back into the caches the other engines used (mha's 2-thread step took
// 53-60 ms so, 40-47 ms run alone). Every engine trains its own copy of the model on one fixed
// random batch; a step's time is what its own loop measures around one step.

#include "app/bench/bench_train.h"

#include <algorithm>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "app/bench/timing.h"
#include "app/bench/torch_choice.h"
#include "app/bench/torch_process.h"
#include "core/backward/training_costs.h"
#include "core/error.h"
#include "core/kernels/kernels.h"
#include "core/train/train_step.h"
#include "io/dry.h"
#include "io/init.h"
#include "io/model_init.h"
#include "show/format.h"
#include "show/text_layout.h"

namespace mha {

namespace {

// The model and batch of one training step.
struct TrainSize {
    std::size_t batch, context, d_model, heads, layers, d_ff, vocab;
};

// mha train's default sizes (the kjv-2x4 recipe) with kjv-2x4's vocabulary of 63 (the corpus
// mha ships has 62 characters: one row fewer in the embedding and the head), and a tiny model
// for --quick.
constexpr TrainSize recipe_size = {32, 128, 64, 4, 2, 256, 63};
constexpr TrainSize quick_size = {2, 16, 16, 2, 2, 32, 11};

struct Engine {
    std::string name;           // "mha" or "torch"
    std::string setting;        // mha: its threads; torch: torch threads / OpenBLAS threads
    std::string form;           // torch: "module" (CharTransformer) or "composed"; mha: ""
    std::vector<double> times;  // ms of every timed step
};

// The size as bench_torch.py --train reads it: "B,N,d_model,h,layers,d_ff,vocab".
std::string size_text(const TrainSize& s) {
    std::string text;
    for (const std::size_t v : {s.batch, s.context, s.d_model, s.heads, s.layers, s.d_ff, s.vocab})
        text += (text.empty() ? "" : ",") + std::to_string(v);
    return text;
}

// A random batch: tokens and targets (B·N ids < V each), drawn from seed 0.
std::vector<std::size_t> random_ids(const TrainSize& s, std::uint32_t stream) {
    Random random(0, stream);
    std::vector<std::size_t> ids(s.batch * s.context);
    for (std::size_t& id : ids)
        id = std::min(std::size_t(random.uniform() * float(s.vocab)), s.vocab - 1);
    return ids;
}

// mha training its own copy of `model` on `threads` threads.
class MhaEngine {
public:
    MhaEngine(const Model& model, const TrainSize& s, std::size_t threads)
        : state_(start_training(model)),
          size_(s),
          threads_(threads),
          tokens_(random_ids(s, 0)),
          targets_(random_ids(s, 1)) {}

    double step_ms() {
        return time_ms(
            [&] { train_step(state_, tokens_, targets_, size_.batch, recipe_, threads_); });
    }

private:
    TrainState state_;
    TrainSize size_;
    std::size_t threads_;
    TrainRecipe recipe_;
    std::vector<std::size_t> tokens_, targets_;  // (B·N) each
};

// PyTorch's engines as candidates for fastest_torch.
std::vector<TorchCandidate> torch_candidates(const std::vector<Engine>& engines) {
    std::vector<TorchCandidate> candidates;
    for (const Engine& e : engines) {
        if (e.name == "torch") candidates.push_back({e.setting, e.form, e.times});
    }
    return candidates;
}

void print_table(const std::vector<Engine>& engines, const TrainSize& s, double macs,
                 const TrainBenchOptions& o) {
    std::cout << "mha bench --train: a training step (forward, backward, clipping, AdamW) of\n"
              << (o.quick ? "a tiny model" : "mha train's default recipe") << ", B " << s.batch
              << " x N " << s.context << " characters, d_model " << s.d_model << ", h " << s.heads
              << ",\n"
              << s.layers << " layers, d_ff " << s.d_ff << ", vocabulary " << s.vocab
              << "; median, min and max of " << o.repeat << " steps per engine;\nkernels "
              << kernel_variant_name() << "\n\n";
    std::cout << "engine  threads      form       ms   min ms   max ms  GFLOP/s\n";
    for (const Engine& e : engines) {
        const Spread t = spread_of(e.times);
        std::cout << padded_left(e.name, 6) << padded_left(e.setting, 9)
                  << padded_left(e.form.empty() ? "-" : e.form, 10)
                  << padded_left(fixed(t.median, 2), 9) << padded_left(fixed(t.min, 2), 9)
                  << padded_left(fixed(t.max, 2), 9)
                  << padded_left(fixed(gflops(macs, t.median), 1), 9) << "\n";
    }
    const double mha = spread_of(engines[0].times).median;
    std::cout << "\nscaling: mha's 1-thread median / its " << engines[0].setting
              << "-thread median = " << fixed(spread_of(engines[1].times).median / mha, 2) << "x\n";
    if (engines.size() == 2) return;
    const TorchBest torch = fastest_torch(torch_candidates(engines));
    std::cout << "vs torch: PyTorch's best median (" << torch.setting << " " << torch.form
              << ") / mha's " << engines[0].setting
              << "-thread median = " << fixed(torch.ms.median / mha, 2)
              << "x\n          (above 1: mha is faster)\n"
                 "torch: examples/models/train.py's CharTransformer (module) and the same model\n"
                 "with its attention from F.linear, matmul and softmax (composed), trained by\n"
                 "train.py's train_step through src/app/bench/bench_torch.py --train; threads:\n"
                 "torch threads / OpenBLAS threads, OPENBLAS_CORETYPE unset. "
              << timing_note(o.timing) << "\n";
}

void print_json(const std::vector<Engine>& engines, const TrainSize& s, double macs,
                const TrainBenchOptions& o) {
    std::cout << "{\"tool\":\"mha bench\",\"train\":true,\"repeat\":" << o.repeat
              << ",\"timing\":\"" << timing_name(o.timing) << "\",\"kernel\":\"" << kernel_variant_name() << "\",\"batch\":" << s.batch
              << ",\"context\":" << s.context << ",\"d_model\":" << s.d_model
              << ",\"heads\":" << s.heads << ",\"layers\":" << s.layers << ",\"d_ff\":" << s.d_ff
              << ",\"vocab\":" << s.vocab << ",\"macs\":" << fixed(macs, 0) << ",\"engines\":[";
    for (std::size_t i = 0; i < engines.size(); ++i) {
        const Spread t = spread_of(engines[i].times);
        std::cout << (i ? ",\n" : "\n") << "{\"engine\":\"" << engines[i].name
                  << "\",\"threads\":\"" << engines[i].setting << "\""
                  << (engines[i].form.empty() ? "" : ",\"form\":\"" + engines[i].form + "\"")
                  << ",\"ms\":" << fixed(t.median, 4)
                  << ",\"ms_min\":" << fixed(t.min, 4) << ",\"ms_max\":" << fixed(t.max, 4)
                  << ",\"gflops\":" << fixed(gflops(macs, t.median), 2) << "}";
    }
    std::cout << "\n]";
    if (engines.size() > 2) {
        const TorchBest torch = fastest_torch(torch_candidates(engines));
        std::cout << ",\"torch_best\":\"" << torch.setting << "\",\"torch_form\":\""
                  << torch.form << "\",\"vs_torch\":"
                  << fixed(torch.ms.median / spread_of(engines[0].times).median, 3);
    }
    std::cout << "}\n";
}

}  // namespace

void run_train_bench(const TrainBenchOptions& o) {
    const TrainSize s = o.quick ? quick_size : recipe_size;
    std::vector<std::uint32_t> vocab(s.vocab);
    for (std::size_t i = 1; i < s.vocab; ++i) vocab[i] = std::uint32_t(' ' + i);
    const Model model = seeded_model(vocab, {s.layers, s.d_model, s.heads, s.d_ff, s.context}, 0);
    MhaEngine mha_all(model, s, o.threads), mha_one(model, s, 1);
    std::vector<std::unique_ptr<TorchProcess>> torch;
    std::vector<Engine> engines = {{"mha", std::to_string(o.threads), "", {}},
                                   {"mha", "1", "", {}}};
    std::vector<std::function<double()>> runs = {[&] { return mha_all.step_ms(); },
                                                 [&] { return mha_one.step_ms(); }};
    if (o.compare_torch) torch = start_torch(TorchProcess::Mode::Train);
    for (const auto& process : torch) {
        for (const std::string& form : process->load(size_text(s))) {
            engines.push_back({"torch", process->setting(), form, {}});
            runs.push_back([&process, form] { return process->run_ms(form); });
        }
    }
    mha_all.step_ms();  // warm-up: the pool's threads, the first touch of every buffer
    mha_one.step_ms();
    const std::vector<std::vector<double>> times =
        time_engines(runs, o.repeat, o.timing, o.compare_torch);
    for (std::size_t e = 0; e < engines.size(); ++e) engines[e].times = times[e];
    const double macs = double(training_step_macs(without_values(model), s.context, s.batch));
    if (o.json)
        print_json(engines, s, macs, o);
    else
        print_table(engines, s, macs, o);
}

}  // namespace mha
