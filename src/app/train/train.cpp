// mha train: the option table and the loop: a batch, a step, an evaluation every --eval-every
// steps, a checkpoint every few hundred, until --steps, the --time-limit or Ctrl-C.

#include "app/train/train.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <iostream>
#include <optional>

#include "app/cli/terminal.h"
#include "app/train/train_checkpoint.h"
#include "app/train/train_checks.h"
#include "app/train/train_data.h"
#include "app/train/train_divergence.h"
#include "app/train/train_eval.h"
#include "app/train/train_options.h"
#include "app/train/train_screen.h"
#include "core/error.h"
#include "core/threads/parallel.h"
#include "core/train/parameters.h"
#include "io/append_file.h"
#include "io/atomic_file.h"
#include "io/file_lock.h"
#include "io/npy.h"
#include "io/printable.h"
#include "io/read_file.h"
#include "io/shipped_corpus.h"
#include "show/format.h"
#include "show/train_log.h"

namespace mha {

namespace {

constexpr std::size_t checkpoint_every = 250;  // steps between the checkpoints on the way
constexpr const char* shipped_name = "the shipped corpus (examples/corpus/kjv.txt)";

// --context: 2 or more, since every evaluation scores induction on texts of context / 2
// random letters written twice (and the previous-token score needs a character before its
// query).
std::size_t parse_context(const Arg& a) {
    const std::size_t context = parse_count(a, max_context);
    if (context < min_context) {
        throw Error(a.option + " must be at least " + std::to_string(min_context) + ", got " +
                    a.text +
                    ": each evaluation writes context / 2 random letters twice to score "
                    "induction heads");
    }
    return context;
}

const std::vector<Option<TrainOptions>>& train_table() {
    using O = TrainOptions;
    static const std::vector<Option<O>> table = {
        section<O>("Recipe:"),
        {{"--steps", 0, "N",
          "steps to train (default 3000); the learning rate warms\n"
          "up over 100 steps, then falls on a cosine to a tenth"},
         [](O& o, const Arg& a) { o.settings.recipe.steps = parse_count(a, 1000000000); }},
        {{"--time-limit", 0, "SECONDS",
          "stop after this many seconds, save and exit (the\n"
          "schedule still spans --steps: --resume goes on)"},
         [](O& o, const Arg& a) { o.time_limit = parse_positive(a); }},
        {{"--seed", 0, "S",
          "seed of the initial weights, every step's batch and\n"
          "the evaluation's texts (default 0)"},
         [](O& o, const Arg& a) { o.settings.seed = parse_unsigned(a); }},
        {{"--threads", 't', "T",
          "worker threads (default: the hardware's); any count\n"
          "gives the same bits"},
         [](O& o, const Arg& a) { o.threads = parse_count(a, max_threads); }},
        {{"--lr", 0, "RATE", "the peak learning rate (default 0.003)"},
         [](O& o, const Arg& a) { o.settings.recipe.lr = parse_positive(a); }},
        section<O>("Sizes (default: kjv-2x4's, examples/models/README.md):"),
        {{"--layers", 0, "L", "transformer blocks (default 2)"},
         [](O& o, const Arg& a) { o.settings.sizes.layers = parse_count(a, 256); }},
        {{"--d-model", 'd', "D", "model width (default 64); divisible by --heads"},
         [](O& o, const Arg& a) { o.settings.sizes.d_model = parse_count(a, 65536); }},
        {{"--heads", 'H', "H", "heads per layer (default 4)"},
         [](O& o, const Arg& a) { o.settings.sizes.heads = parse_count(a, 4096); }},
        {{"--d-ff", 0, "F", "the feed-forward width (default 256)"},
         [](O& o, const Arg& a) { o.settings.sizes.d_ff = parse_count(a, 1 << 20); }},
        {{"--context", 0, "C",
          "characters per row, the model's context (default 128, at\nleast 2)"},
         [](O& o, const Arg& a) { o.settings.sizes.context = parse_context(a); }},
        {{"--batch", 'b', "B", "rows per step (default 32)"},
         [](O& o, const Arg& a) { o.settings.batch = parse_count(a, 65536); }},
        section<O>("Files:"),
        {{"--corpus", 0, "FILE",
          "UTF-8 text to learn from (default: 1.5 MiB of the King\n"
          "James Bible, built in); one token per character: token\n"
          "0 unknown, then its characters, at most the 255 most\n"
          "frequent; its last 3% held out"},
         [](O& o, const Arg& a) { o.corpus = parse_path(a); }},
        {{"--out", 'o', "FILE.npz",
          "the model and the state to resume from (default\n"
          "mha-train.npz), written atomically every 250 steps, at\n"
          "the end, at --time-limit and on Ctrl-C; mha --model\n"
          "reads it"},
         [](O& o, const Arg& a) { o.out = parse_path(a); }},
        {{"--log", 0, "FILE.jsonl",
          "one JSON object per evaluation: step, seconds, loss,\n"
          "val_loss, prev_token and induction ([layer][head]);\n"
          "a --resume run appends to it"},
         [](O& o, const Arg& a) { o.log = parse_path(a); }},
        {{"--resume", 0, "FILE.npz",
          "go on from a checkpoint, bit for bit as if never\n"
          "stopped; sizes, recipe, seed and --eval-every come\n"
          "from it (the corpus must be the same)"},
         [](O& o, const Arg& a) { o.resume = parse_path(a); }},
        {{"--save-batches", 0, "FILE.npz",
          "also write every step's batch: inputs and targets,\n"
          "int32 (steps, batch, context), for a cross-check"},
         [](O& o, const Arg& a) { o.save_batches = parse_path(a); }},
        section<O>("Evaluation and limits:"),
        {{"--eval-every", 0, "N",
          "steps between evaluations (default 50, or the --resume\n"
          "checkpoint's): held-out loss, each head's previous-token\n"
          "and induction scores"},
         [](O& o, const Arg& a) { o.eval_every = parse_count(a, 1000000000); }},
        {{"--max-memory", 0, "SIZE", "refuse runs needing more memory (default 2G)"},
         [](O& o, const Arg& a) { o.max_memory = parse_bytes(a); }},
        {{"--max-time", 0, "SECONDS|off",
          "refuse runs estimated (from their multiply-adds) to\n"
          "take longer than this (default off)"},
         [](O& o, const Arg& a) { o.max_time = parse_seconds_or_off(a); }},
        {{"--help", 'h', "", "this help"}, [](O& o, const Arg&) { o.help = true; }},
    };
    return table;
}

// ---- Ctrl-C ----------------------------------------------------------------

volatile std::sig_atomic_t interrupted = 0;

extern "C" void note_interrupt(int) { interrupted = 1; }

// While alive, SIGINT only sets `interrupted`: the loop saves and stops (an ignored SIGINT,
// as in a shell's background job, stays ignored).
class InterruptFlag {
public:
    InterruptFlag() {
        sigaction(SIGINT, nullptr, &previous_);
        if (previous_.sa_handler == SIG_IGN) return;
        struct sigaction action {};
        action.sa_handler = note_interrupt;
        sigemptyset(&action.sa_mask);
        sigaction(SIGINT, &action, nullptr);
    }
    InterruptFlag(const InterruptFlag&) = delete;
    InterruptFlag& operator=(const InterruptFlag&) = delete;
    ~InterruptFlag() { sigaction(SIGINT, &previous_, nullptr); }

private:
    struct sigaction previous_ {};
};

// ---- output ------------------------------------------------------------------

// A number in 6 significant digits: NaN, inf and -inf as such.
std::string number_text(double value) {
    if (std::isnan(value)) return "NaN";
    char text[32];
    std::snprintf(text, sizeof text, "%.6g", value);
    return text;
}

// --save-batches: the batches of steps [first, last), regenerated from (seed, step).
void save_batches(const TrainOptions& o, const Corpus& corpus, std::uint64_t first,
                  std::uint64_t last) {
    const std::size_t B = o.settings.batch, N = o.settings.sizes.context;
    npy::Array inputs{{std::size_t(last - first), B, N}, 'i', 4, {}};
    npy::Array targets = inputs;
    for (std::uint64_t step = first; step < last; ++step) {
        const Batch batch = training_batch(corpus, o.settings.seed, step, B, N);
        inputs.values.insert(inputs.values.end(), batch.tokens.begin(), batch.tokens.end());
        targets.values.insert(targets.values.end(), batch.targets.begin(), batch.targets.end());
    }
    npy::write_npz(o.save_batches, {},
                   {{"inputs", std::move(inputs)}, {"targets", std::move(targets)}});
}

// ---- the run -------------------------------------------------------------------

// --out, --log and --save-batches locked for the run: a second run writing one is refused.
std::deque<FileLock> lock_outputs(const TrainOptions& o) {
    const std::pair<const char*, const std::string*> files[] = {
        {"--out", &o.out}, {"--log", &o.log}, {"--save-batches", &o.save_batches}};
    std::deque<FileLock> locks;
    for (const auto& [option, path] : files) {
        if (path->empty()) continue;
        const FileLock& lock = locks.emplace_back(*path);
        if (!lock.held()) {
            throw Error(std::string(option) + " " + *path +
                        " is being written by another mha train (it holds " + lock.lock_path() +
                        "); wait for that run to end, or give " + option + " another name");
        }
    }
    return locks;
}

std::string read_corpus_text(const TrainOptions& o) {
    if (o.corpus.empty()) return std::string(shipped_corpus());
    return read_file(o.corpus, Ledger(o.max_memory));
}

class Trainer {
public:
    Trainer(const TrainOptions& o, Corpus corpus, Checkpoint checkpoint, std::size_t threads)
        : o_(o),
          corpus_(std::move(corpus)),
          c_(std::move(checkpoint)),
          threads_(threads),
          texts_(evaluation_texts(corpus_, c_.settings.seed, c_.settings.sizes.context)),
          first_step_(c_.state.step),
          checkpoint_(o.resume),
          checkpoint_step_(c_.state.step),
          started_(std::chrono::steady_clock::now()) {}

    int run() {
        InterruptFlag flag;
        screen_.emplace(std::cout,
                        wants_live_panel(stdout_takes_escapes(), std::getenv("NO_COLOR")));
        if (!o_.log.empty()) log_.emplace(o_.log, o_.resume.empty());
        // a resumed run goes on from its last evaluation, as a run never stopped would: the
        // checkpoint's step is evaluated only where --eval-every falls
        if (c_.history.empty())
            evaluate();
        else
            probe_weights_ = probe_weights(c_.state.model, texts_, threads_);
        if (screen_->due(c_.history.size())) screen_->show(snapshot());
        const TrainRecipe& recipe = c_.settings.recipe;
        while (c_.state.step < recipe.steps) {
            if (interrupted) return stop(130, "interrupted");
            if (o_.time_limit && elapsed() >= *o_.time_limit)
                return stop(0, "--time-limit " + number_text(*o_.time_limit) + " s reached");
            const Batch batch = training_batch(corpus_, c_.settings.seed, c_.state.step,
                                               c_.settings.batch, c_.settings.sizes.context);
            keep_parameters();
            std::string diverged;
            const StepResult result = [&] {
                try {
                    return train_step(c_.state, batch.tokens, batch.targets, c_.settings.batch,
                                      recipe, threads_);
                } catch (const Error& error) {  // an activation beyond float32
                    diverged = error.what();
                    return StepResult{};
                }
            }();
            if (diverged.empty() &&
                !(std::isfinite(result.loss) && std::isfinite(result.grad_norm)))
                diverged = "the loss is " + number_text(result.loss) + " and the gradients' norm " +
                           number_text(result.grad_norm) + "; NaN or infinity first appears in " +
                           first_non_finite(restored_state(), batch, threads_);
            if (!diverged.empty()) return diverge(c_.state.step + 1, diverged);
            kept_.clear();  // a copy of the parameters: not held through the checkpoint
            c_.step_losses.push_back(result.loss);
            const std::uint64_t step = c_.state.step;
            if (step % c_.eval_every == 0 || step == recipe.steps) {
                std::optional<Evaluated> evaluated;
                try {
                    evaluated = mha::evaluate(c_.state.model, texts_, threads_);
                } catch (const Error& error) {  // the step's weights overflow on a text
                    return diverge(step, error.what());
                }
                record(std::move(*evaluated));  // a failed --log write: exit status 2
            }
            if (step % checkpoint_every == 0 && step != recipe.steps) save();
            if (screen_->due(c_.history.size())) screen_->show(snapshot());
        }
        save();
        screen_.reset();
        // the model, then the command that looks at it: no terminal wraps the pair mid-word
        std::cout << "mha: trained " << with_commas(recipe.steps)
                  << (recipe.steps == 1 ? " step in " : " steps in ") << fixed(elapsed(), 1)
                  << " s; the model is in " << escaped(o_.out) << "\n  its heads: mha --model "
                  << escaped(o_.out) << " --text \"...\" --summary\n";
        return 0;
    }

private:
    // Step `step` (from 1) left the model unusable: one line, exit status 1.
    int diverge(std::uint64_t step, const std::string& why) {
        screen_.reset();
        std::cerr << "mha: training diverged at step " << with_commas(step) << " of "
                  << with_commas(c_.settings.recipe.steps)
                  << ": " << escaped(why) << "; "
                  << (checkpoint_.empty()
                          ? "no checkpoint was written"
                          : escaped(checkpoint_) + " keeps the checkpoint of step " +
                                std::to_string(checkpoint_step_))
                  << " (a smaller --lr?)\n";
        return 1;
    }

    // The parameters before the step, for restored_state.
    void keep_parameters() {
        kept_.clear();
        for (const Parameter& p : model_parameters(c_.state.model))
            for (const Tensor* part : p.parts) kept_.push_back(part->to_vector());
    }

    // The state as it was before the step that diverged (its update undone).
    TrainState& restored_state() {
        std::size_t next = 0;
        for (const Parameter& p : model_parameters(c_.state.model))
            for (Tensor* part : p.parts) *part = Tensor(part->shape(), kept_[next++]);
        c_.state.step -= 1;
        return c_.state;
    }

    double elapsed() const {
        const std::chrono::duration<double> d = std::chrono::steady_clock::now() - started_;
        return c_.seconds + d.count();
    }

    void evaluate() { record(mha::evaluate(c_.state.model, texts_, threads_)); }

    // An evaluation of the model as it is now: added to the history, shown and logged.
    void record(Evaluated e) {
        TrainEvaluation& t = e.evaluation;
        t.step = std::size_t(c_.state.step);
        t.seconds = elapsed();
        const std::size_t since = c_.history.empty() ? 0 : c_.history.back().step;
        double sum = 0.0;
        for (std::size_t s = since; s < c_.step_losses.size(); ++s) sum += c_.step_losses[s];
        t.loss = c_.step_losses.size() > since ? sum / double(c_.step_losses.size() - since) : NAN;
        c_.history.push_back(t);
        probe_weights_ = std::move(e.probe_weights);
        screen_->show(snapshot());
        if (log_) log_->write_line(train_log_line(t));
    }

    void save() {
        c_.seconds = elapsed();
        started_ = std::chrono::steady_clock::now();
        save_checkpoint(o_.out, c_);
        checkpoint_ = o_.out;
        checkpoint_step_ = c_.state.step;
        if (!o_.save_batches.empty()) save_batches(o_, corpus_, first_step_, c_.state.step);
    }

    // What the panel draws now. The time to go: this run's seconds per step so far for the
    // steps left, or the --time-limit if that comes first.
    TrainSnapshot snapshot() const {
        TrainSnapshot s;
        s.step = std::size_t(c_.state.step);
        s.steps = c_.settings.recipe.steps;
        s.seconds = elapsed();
        const std::uint64_t taken = c_.state.step - first_step_;
        if (taken > 0) {
            const std::chrono::duration<double> run =
                std::chrono::steady_clock::now() - run_started_;
            s.eta_seconds = run.count() / double(taken) * double(s.steps - s.step);
        }
        if (o_.time_limit) s.eta_seconds = std::min(s.eta_seconds, *o_.time_limit - s.seconds);
        s.step_losses = c_.step_losses;
        s.history = c_.history;
        for (const std::string& character : texts_.probe.characters) s.probe += character;
        s.probe_characters = texts_.probe.characters;
        s.probe_weights = probe_weights_;
        return s;
    }

    int stop(int status, const std::string& why) {
        save();
        screen_.reset();
        std::cerr << "mha: " << why << " at step " << with_commas(c_.state.step) << " of "
                  << with_commas(c_.settings.recipe.steps) << "; the checkpoint is in "
                  << escaped(o_.out) << " (mha train --resume " << escaped(o_.out) << " goes on)\n";
        return status;
    }

    const TrainOptions& o_;
    Corpus corpus_;
    Checkpoint c_;
    std::size_t threads_;
    EvaluationTexts texts_;
    std::uint64_t first_step_;
    std::string checkpoint_;         // the file holding the last checkpoint, if any
    std::uint64_t checkpoint_step_;  // its step
    std::chrono::steady_clock::time_point started_;
    const std::chrono::steady_clock::time_point run_started_ = std::chrono::steady_clock::now();
    std::optional<AppendFile> log_;         // --log
    std::vector<std::vector<float>> kept_;  // every parameter part before the step
    std::vector<Tensor> probe_weights_;     // per layer (1, h, N, N): the last evaluation's
    std::optional<TrainScreen> screen_;     // while run() lives
};

}  // namespace

const CommandInfo& train_command() {
    static const CommandInfo command =
        command_info<TrainOptions>("train", R"(Usage: mha train [options]
Trains the character model of examples/models/README.md (kjv-2x4's recipe:
2 pre-LN layers, d_model 64, 4 heads, d_ff 256, context 128, batch 32, AdamW,
3000 steps) on 1.5 MiB of the King James Bible built into mha, or on
--corpus, and shows the heads form: every --eval-every steps the held-out
loss and each head's previous-token and induction scores. On a terminal
(NO_COLOR unset, TERM not dumb) a live panel redraws them in place, with the loss curves,
score bars and two heads' weights (docs/training.md); otherwise one line per
evaluation. Ctrl-C saves the
checkpoint and stops (exit 130); --resume goes on bit for bit. The same seed
gives the same bits at any thread count.
)",
                                   R"(Examples:
  mha train                                  the default recipe
  mha train --steps 200 --time-limit 60      a short look
  mha train --resume mha-train.npz           go on from the checkpoint
  mha --model mha-train.npz --text "In the beginning" --summary
                                             what the heads do now
)",
                                   "train ", train_table());
    return command;
}

int run_train(const std::vector<std::string>& args) {
    TrainOptions o;
    const std::vector<std::string> given = apply_options(train_command(), train_table(), args, o);
    if (o.help) {
        std::cout << help_text(train_command());
        return 0;
    }
    check_writable(o.out);
    if (!o.log.empty()) check_writable(o.log);
    if (!o.save_batches.empty()) check_writable(o.save_batches);
    check_distinct_files(o);
    if (o.resume.empty()) check_sizes(o.settings);  // a resumed run takes the checkpoint's
    const std::deque<FileLock> locks = lock_outputs(o);
    const std::string source = o.corpus.empty() ? shipped_name : o.corpus;
    const std::string text = read_corpus_text(o);
    check_corpus_memory(o, text.size(), source);
    Corpus corpus = read_corpus(text, source);
    Checkpoint checkpoint;
    if (!o.resume.empty()) {
        checkpoint = load_checkpoint(o.resume, o.max_memory);
        check_resume_matches(o, given, checkpoint, corpus, source);
        o.settings = checkpoint.settings;
        const bool eval_given =
            std::find(given.begin(), given.end(), "--eval-every") != given.end();
        if (!eval_given && checkpoint.eval_every != 0) o.eval_every = checkpoint.eval_every;
    } else {
        checkpoint.settings = o.settings;
        checkpoint.corpus_characters = corpus.characters;
        checkpoint.corpus_fingerprint = corpus.fingerprint;
    }
    check_corpus_fits(corpus, source, o.settings.sizes.context);
    checkpoint.eval_every = std::min<std::uint64_t>(o.eval_every, o.settings.recipe.steps);
    const std::size_t threads = o.threads ? o.threads : hardware_threads();
    check_memory(o, text.size(), corpus.vocab.size(), threads);
    check_training_time(o, corpus.vocab.size(), checkpoint.state.step, threads);
    if (o.resume.empty())
        checkpoint.state =
            start_training(seeded_model(corpus.vocab, o.settings.sizes, o.settings.seed));
    Trainer trainer(o, std::move(corpus), std::move(checkpoint), threads);
    return trainer.run();
}

}  // namespace mha
