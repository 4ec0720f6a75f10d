// mha bench --train. The engines take turns, round after round: mha on all its threads, mha
// on one, and with --compare-torch PyTorch at torch threads 1, 2 x OpenBLAS threads 1, 2, each
// a src/app/bench_torch.py --train process that stays alive and takes a step whenever it is
// told to (over a socket pair: its stdin and stdout), with a pause after every turn (settle).
// So a load that comes and goes on a shared machine falls on every engine alike, and the
// ratio of medians taken in one run means something. A turn is two steps back to back, the
// second timed, as a training run's steps follow each other: the first step after the pause
// wakes the engine's threads and brings its tensors back into the caches the other engines
// used (mha's 2-thread step took 53-60 ms so, 40-47 ms run alone). Every engine trains its
// own copy of the model on one fixed random batch; a step's time is what its own loop
// measures around one step.

#include "app/bench_train.h"

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "app/bench.h"
#include "core/error.h"
#include "core/kernels/kernels.h"
#include "core/pass/plan.h"
#include "core/train/train_step.h"
#include "io/init.h"
#include "io/model_init.h"
#include "show/format.h"
#include "show/text_layout.h"

namespace mha {

namespace {

const char* const torch_command = "/usr/bin/python3 src/app/bench_torch.py --train";

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
    std::vector<double> times;  // ms of every timed step
};

// A random batch: tokens and targets (B·N ids < V each), drawn from seed 0.
std::vector<std::size_t> random_ids(const TrainSize& s, std::uint32_t stream) {
    Random random(0, stream);
    std::vector<std::size_t> ids(s.batch * s.context);
    for (std::size_t& id : ids)
        id = std::min(std::size_t(random.uniform() * float(s.vocab)), s.vocab - 1);
    return ids;
}

// One training step's multiply-adds, forward and backward, as the plans count them: the
// model's plan (the embedding, layer 0 step by step, the head and the loss) counts each other
// layer as one step without them, so those come from the layer's own plan.
double step_macs(const Model& model, const TrainSize& s) {
    ModelSpec spec = model_spec(model, s.context, 0);
    spec.layer.sizes.batch = s.batch;
    spec.backward = true;
    PassSpec layer = spec.layer;
    layer.backward = true;
    return double(planned_macs(plan_model(spec))) +
           double(s.layers - 1) * double(planned_macs(plan_pass(layer)));
}

// mha training its own copy of `model` on `threads` threads.
class MhaEngine {
public:
    MhaEngine(const Model& model, const TrainSize& s, std::size_t threads)
        : state_(start_training(model)), size_(s), threads_(threads),
          tokens_(random_ids(s, 0)), targets_(random_ids(s, 1)) {}

    double step_ms() {
        const auto start = std::chrono::steady_clock::now();
        train_step(state_, tokens_, targets_, size_.batch, recipe_, threads_);
        return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count();
    }

private:
    TrainState state_;
    TrainSize size_;
    std::size_t threads_;
    TrainRecipe recipe_;
    std::vector<std::size_t> tokens_, targets_;  // (B·N) each
};

// src/app/bench_torch.py --train in a child process at one thread setting, talked to over a
// socket pair (no SIGPIPE when it dies: send with MSG_NOSIGNAL). Our end is closed on exec, so
// the other children do not hold it open: closing it is the end of this child's input.
class TorchEngine {
public:
    TorchEngine(const TrainSize& s, std::size_t torch_threads, std::size_t blas_threads) {
        command_ = "env -u OPENBLAS_CORETYPE OPENBLAS_NUM_THREADS=" +
                   std::to_string(blas_threads) + " " + torch_command + " --threads " +
                   std::to_string(torch_threads) + " " + std::to_string(s.batch) + "," +
                   std::to_string(s.context) + "," + std::to_string(s.d_model) + "," +
                   std::to_string(s.heads) + "," + std::to_string(s.layers) + "," +
                   std::to_string(s.d_ff) + "," + std::to_string(s.vocab);
        int ends[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0)
            throw Error("bench: cannot open a socket pair to PyTorch");
        std::cout.flush();
        pid_ = fork();
        if (pid_ < 0) {
            close(ends[0]);
            close(ends[1]);
            throw Error("bench: cannot start " + command_);
        }
        if (pid_ == 0) {
            dup2(ends[1], 0);
            dup2(ends[1], 1);
            close(ends[0]);
            close(ends[1]);
            execl("/bin/sh", "sh", "-c", command_.c_str(), static_cast<char*>(nullptr));
            _exit(127);
        }
        close(ends[1]);
        socket_ = ends[0];
        if (read_line() != "ready") {
            stop();
            fail();
        }
    }

    TorchEngine(const TorchEngine&) = delete;
    TorchEngine& operator=(const TorchEngine&) = delete;

    ~TorchEngine() { stop(); }

    double step_ms() {
        if (send(socket_, "1\n", 2, MSG_NOSIGNAL) != 2) fail();
        std::istringstream line(read_line());
        double ms = 0;
        if (!(line >> ms)) fail();
        return ms;
    }

private:
    // Its input ends, so it leaves its loop and exits; then it is waited for.
    void stop() {
        if (socket_ >= 0) close(socket_);
        if (pid_ > 0) waitpid(pid_, nullptr, 0);
        socket_ = -1;
        pid_ = -1;
    }

    [[noreturn]] void fail() const {
        throw Error("bench: PyTorch's training step failed: " + command_);
    }

    // The next line it prints, without the newline ("" when it has gone).
    std::string read_line() {
        for (;;) {
            const std::size_t end = pending_.find('\n');
            if (end != std::string::npos) {
                const std::string line = pending_.substr(0, end);
                pending_.erase(0, end + 1);
                return line;
            }
            char buffer[256];
            const ssize_t got = recv(socket_, buffer, sizeof buffer, 0);
            if (got <= 0) return "";
            pending_.append(buffer, std::size_t(got));
        }
    }

    std::string command_;
    pid_t pid_ = -1;
    int socket_ = -1;
    std::string pending_;  // what it printed past the last line read
};

// With --compare-torch, a pause after every turn, so that the threads an engine leaves polling
// have gone to sleep before the next engine starts: OpenBLAS's idle threads poll for about
// 0.1 s after a call (torch 1.13 here, OPENBLAS_NUM_THREADS=2: 60-70 ms of CPU time in the
// 0.2 s after one 4096 x 64 x 256 product; with 1 BLAS thread none).
void settle(const TrainBenchOptions& o) {
    if (o.compare_torch) std::this_thread::sleep_for(std::chrono::milliseconds(150));
}

// One engine's turn: a step that wakes it, the step that is timed, and the pause.
template <typename Stepper>
double turn(Stepper& engine, const TrainBenchOptions& o) {
    engine.step_ms();
    const double ms = engine.step_ms();
    settle(o);
    return ms;
}

double gflops(double macs, double ms) { return 2 * macs / ms / 1e6; }

// The torch engine with the smallest median, or none.
const Engine* best_torch(const std::vector<Engine>& engines) {
    const Engine* best = nullptr;
    for (const Engine& e : engines) {
        if (e.name != "torch") continue;
        if (!best || spread_of(e.times).median < spread_of(best->times).median) best = &e;
    }
    return best;
}

void print_table(const std::vector<Engine>& engines, const TrainSize& s, double macs,
                 const TrainBenchOptions& o) {
    std::cout << "mha bench --train: a training step (forward, backward, clipping, AdamW) of\n"
              << (o.quick ? "a tiny model" : "mha train's default recipe") << ", B " << s.batch
              << " x N " << s.context << " characters, d_model " << s.d_model << ", h "
              << s.heads << ",\n"
              << s.layers << " layers, d_ff " << s.d_ff << ", vocabulary " << s.vocab
              << "; median, min and max of " << o.repeat << " steps per engine,\n"
              << "the engines taking turns of two steps, the second timed; kernels "
              << kernel_variant_name()
              << "\n\n";
    std::cout << "engine  threads       ms   min ms   max ms  GFLOP/s\n";
    for (const Engine& e : engines) {
        const Spread t = spread_of(e.times);
        std::cout << padded_left(e.name, 6) << padded_left(e.setting, 9)
                  << padded_left(fixed(t.median, 2), 9) << padded_left(fixed(t.min, 2), 9)
                  << padded_left(fixed(t.max, 2), 9)
                  << padded_left(fixed(gflops(macs, t.median), 1), 9) << "\n";
    }
    const double mha = spread_of(engines[0].times).median;
    std::cout << "\nscaling: mha's 1-thread median / its " << engines[0].setting
              << "-thread median = " << fixed(spread_of(engines[1].times).median / mha, 2)
              << "x\n";
    const Engine* torch = best_torch(engines);
    if (torch == nullptr) return;
    std::cout << "vs torch: PyTorch's best median (" << torch->setting << ") / mha's "
              << engines[0].setting << "-thread median = "
              << fixed(spread_of(torch->times).median / mha, 2)
              << "x\n          (above 1: mha is faster)\n"
                 "torch: examples/models/train.py's CharTransformer and train_step through\n"
                 "src/app/bench_torch.py --train; threads: torch threads / OpenBLAS threads,\n"
                 "OPENBLAS_CORETYPE unset; a 0.15 s pause after every turn lets idle threads\n"
                 "sleep before the next engine runs\n";
}

void print_json(const std::vector<Engine>& engines, const TrainSize& s, double macs,
                const TrainBenchOptions& o) {
    std::cout << "{\"tool\":\"mha bench\",\"train\":true,\"repeat\":" << o.repeat
              << ",\"kernel\":\"" << kernel_variant_name() << "\",\"batch\":" << s.batch
              << ",\"context\":" << s.context << ",\"d_model\":" << s.d_model
              << ",\"heads\":" << s.heads << ",\"layers\":" << s.layers << ",\"d_ff\":" << s.d_ff
              << ",\"vocab\":" << s.vocab << ",\"macs\":" << fixed(macs, 0) << ",\"engines\":[";
    for (std::size_t i = 0; i < engines.size(); ++i) {
        const Spread t = spread_of(engines[i].times);
        std::cout << (i ? ",\n" : "\n") << "{\"engine\":\"" << engines[i].name
                  << "\",\"threads\":\"" << engines[i].setting << "\",\"ms\":"
                  << fixed(t.median, 4) << ",\"ms_min\":" << fixed(t.min, 4)
                  << ",\"ms_max\":" << fixed(t.max, 4)
                  << ",\"gflops\":" << fixed(gflops(macs, t.median), 2) << "}";
    }
    std::cout << "\n]";
    if (const Engine* torch = best_torch(engines)) {
        std::cout << ",\"torch_best\":\"" << torch->setting << "\",\"vs_torch\":"
                  << fixed(spread_of(torch->times).median / spread_of(engines[0].times).median, 3);
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
    std::vector<std::unique_ptr<TorchEngine>> torch;
    std::vector<Engine> engines = {{"mha", std::to_string(o.threads), {}}, {"mha", "1", {}}};
    if (o.compare_torch) {
        for (const std::size_t torch_threads : {1, 2}) {
            for (const std::size_t blas_threads : {1, 2}) {
                torch.push_back(
                    std::make_unique<TorchEngine>(s, torch_threads, blas_threads));
                engines.push_back({"torch", std::to_string(torch_threads) + "/" +
                                                std::to_string(blas_threads), {}});
            }
        }
    }
    mha_all.step_ms();  // warm-up: the pool's threads, the first touch of every buffer
    mha_one.step_ms();
    for (std::size_t round = 0; round < o.repeat; ++round) {
        engines[0].times.push_back(turn(mha_all, o));
        engines[1].times.push_back(turn(mha_one, o));
        for (std::size_t i = 0; i < torch.size(); ++i)
            engines[2 + i].times.push_back(turn(*torch[i], o));
    }
    const double macs = step_macs(model, s);
    if (o.json)
        print_json(engines, s, macs, o);
    else
        print_table(engines, s, macs, o);
}

}  // namespace mha
