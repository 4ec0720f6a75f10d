// The checks mha train makes before its first step.

#include "app/train/train_checks.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <numeric>

#include "app/run/time_guard.h"
#include "core/backward/training_costs.h"
#include "core/checked.h"
#include "core/error.h"
#include "core/pass/costs.h"
#include "core/train/train_step.h"
#include "io/atomic_file.h"
#include "io/dry.h"
#include "show/format.h"

namespace mha {

namespace {

std::string sizes_text(const TrainSettings& s) {
    const ModelSizes& m = s.sizes;
    return "--layers " + std::to_string(m.layers) + " -d " + std::to_string(m.d_model) + " -H " +
           std::to_string(m.heads) + " --d-ff " + std::to_string(m.d_ff) + " --context " +
           std::to_string(m.context) + " --batch " + std::to_string(s.batch);
}

// What makes two names one file: its device and inode when it exists, else the absolute
// path it would be made at, links followed.
std::string file_identity(const std::string& path) {
    struct stat status {};
    if (::stat(path.c_str(), &status) == 0)
        return std::to_string(status.st_dev) + ":" + std::to_string(status.st_ino);
    namespace fs = std::filesystem;
    return fs::weakly_canonical(fs::absolute(write_target(path))).string();
}

// A model of these sizes over `vocab` tokens without values: what the estimates run dry.
Model dry_training_model(const TrainSettings& s, std::size_t vocab) {
    std::vector<std::uint32_t> codes(vocab);
    std::iota(codes.begin(), codes.end(), 0u);  // only how many there are shapes the model
    return dry_model(codes, s.sizes);
}

// Bytes a run holds at its peak, estimated from the sizes, and measured against the peak RSS
// by the [memory] test (tests/test_train_memory.cpp). The corpus is decoded first, alone
// (corpus_decoding bytes a byte); then the run holds, from start to end, the decoded corpus
// (corpus_kept bytes a byte), the parameters three times (values and AdamW's two moments),
// every step's loss and every evaluation (each up to five times: kept, drawn, and as the
// checkpoint's array, .npy bytes and archive), and each working thread's micro-batch
// workspace (core/train/train_step.h: every layer's activations and their gradients, the
// logits with their gradient and softmax, counted by a dry run, with each thread's kernel
// scratch), which the step keeps for the next. On top of that,
// one at a time: the step (the parameters before it, kept in case it diverges, the gradients
// of each micro-batch, their sum and a gathered copy), an evaluation (one row through the
// model, run dry), the checkpoint (the model's arrays, some gathered, then the .npy bytes of
// them and of the moments, each made from a copy of its array, then the archive of those:
// seven copies of the parameters and one of the largest array) and
// --save-batches' arrays (a double per value to write, its .npy and the archive).
// `threads`: the run's, resolved.
std::uint64_t train_bytes(const TrainOptions& o, std::uint64_t corpus_bytes, std::size_t vocab,
                          std::size_t threads) {
    const std::string what = "the memory for training";
    const TrainSettings& s = o.settings;
    const ModelSizes& m = s.sizes;
    const std::uint64_t E = m.d_model, F = m.d_ff, V = vocab;
    const std::uint64_t per_layer =
        checked_sum({4 * E * E + 4 * E, 4 * E, 2 * E * F + E + F}, what);
    const std::uint64_t parameters =
        checked_product({checked_sum({checked_product({V + m.context + 2, E}, what), V,
                                      checked_product({m.layers, per_layer}, what)},
                                     what),
                         sizeof(float)},
                        what);
    const MicroBatches micro = micro_batches(s.batch, m.context, s.recipe.micro_batch);
    const std::uint64_t at_once = std::min<std::uint64_t>(micro.count, threads);
    const Model dry = dry_training_model(s, vocab);
    const std::vector<std::size_t> micro_tokens(micro.rows * m.context, 0);
    const Sizes layer{micro.rows, m.context, m.context, m.d_model,          m.d_model,
                      m.d_model,  m.heads,   m.heads,   m.d_model / m.heads};
    const std::uint64_t workspaces = checked_sum(
        {checked_product({forward_backward_peak_bytes(dry, micro_tokens, micro_tokens, micro.rows),
                          at_once},
                         what),
         checked_product({threads, scratch_bytes(layer, AttentionPath::Standard, true)}, what)},
        what);
    const std::uint64_t evaluations = s.recipe.steps / std::max<std::size_t>(o.eval_every, 1) + 2;
    const std::uint64_t records = checked_product(
        {checked_sum(
             {s.recipe.steps, checked_product({evaluations, 4 + 2 * m.layers * m.heads}, what)},
             what),
         sizeof(double), 5},
        what);
    const std::uint64_t step = checked_product({parameters, 3 + micro.count}, what);
    const std::uint64_t evaluation =
        forward_peak_bytes(dry, std::vector<std::size_t>(m.context, 0), false);
    const std::uint64_t largest = checked_product(
        {std::max({3 * E * E + 3 * E, V * E, E * F, std::uint64_t(m.context) * E}), sizeof(float)},
        what);
    const std::uint64_t checkpoint =
        checked_sum({checked_product({parameters, 7}, what), largest}, what);
    const std::uint64_t batches =
        o.save_batches.empty()
            ? 0
            : checked_product({s.recipe.steps, s.batch, m.context, 2, sizeof(double) + 2 * 4},
                              what);
    const std::uint64_t run = checked_sum(
        {checked_product({corpus_bytes, corpus_kept}, what), checked_product({parameters, 3}, what),
         records, workspaces, std::max({step, evaluation, checkpoint, batches})},
        what);
    return std::max(checked_product({corpus_bytes, corpus_decoding}, what), run);
}

}  // namespace

void check_resume_matches(const TrainOptions& o, const std::vector<std::string>& given,
                          const Checkpoint& c, const Corpus& corpus, const std::string& source) {
    const TrainSettings& want = o.settings;
    const TrainSettings& have = c.settings;
    const auto check = [&](const char* option, const std::string& asked, const std::string& had) {
        if (std::find(given.begin(), given.end(), option) == given.end() || asked == had) return;
        throw Error("--resume " + o.resume + " was trained with " + option + " " + had + ", not " +
                    asked + "; leave " + option + " out to go on with the checkpoint's");
    };
    using std::to_string;
    check("--layers", to_string(want.sizes.layers), to_string(have.sizes.layers));
    check("--d-model", to_string(want.sizes.d_model), to_string(have.sizes.d_model));
    check("--heads", to_string(want.sizes.heads), to_string(have.sizes.heads));
    check("--d-ff", to_string(want.sizes.d_ff), to_string(have.sizes.d_ff));
    check("--context", to_string(want.sizes.context), to_string(have.sizes.context));
    check("--batch", to_string(want.batch), to_string(have.batch));
    check("--steps", to_string(want.recipe.steps), to_string(have.recipe.steps));
    check("--seed", to_string(want.seed), to_string(have.seed));
    check("--lr", compact(want.recipe.lr), compact(have.recipe.lr));
    if (corpus.characters != c.corpus_characters || corpus.fingerprint != c.corpus_fingerprint) {
        throw Error("--resume " + o.resume + " was trained on another corpus (" +
                    to_string(c.corpus_characters) + " characters), not " + source + " (" +
                    to_string(corpus.characters) + "); give the --corpus it was trained on");
    }
    if (c.state.model.vocab != corpus.vocab) {
        throw Error("--resume " + o.resume +
                    ": its vocab array holds other characters than the corpus it was trained on "
                    "(a damaged file?)");
    }
}

void check_distinct_files(const TrainOptions& o) {
    const std::pair<const char*, const std::string*> files[] = {
        {"--corpus", &o.corpus}, {"--resume", &o.resume}, {"--out", &o.out},
        {"--log", &o.log},       {"--save-batches", &o.save_batches}};
    std::vector<std::pair<const char*, std::string>> named;
    for (const auto& [option, path] : files)
        if (!path->empty()) named.emplace_back(option, file_identity(*path));
    for (std::size_t i = 0; i < named.size(); ++i) {
        for (std::size_t j = i + 1; j < named.size(); ++j) {
            const bool in_place = std::string(named[i].first) == "--resume" &&
                                  std::string(named[j].first) == "--out";
            if (named[i].second != named[j].second || in_place) continue;
            throw Error(std::string(named[i].first) + " and " + named[j].first +
                        " name the same file; the run would overwrite it: give " +
                        named[j].first + " another name");
        }
    }
}

void check_sizes(const TrainSettings& s) {
    if (s.sizes.d_model % s.sizes.heads != 0) {
        throw Error("-d " + std::to_string(s.sizes.d_model) + " is not divisible by -H " +
                    std::to_string(s.sizes.heads) + "; each head takes d_model / h features");
    }
}

void check_corpus_memory(const TrainOptions& o, std::uint64_t corpus_bytes,
                         const std::string& source) {
    const std::uint64_t need = checked_product({corpus_bytes, corpus_decoding}, "the corpus");
    if (need <= o.max_memory) return;
    throw Error(source + " holds " + byte_size(corpus_bytes) + ", which takes about " +
                byte_size(need) + " to read as tokens, more than --max-memory " +
                byte_size(o.max_memory) + "; raise --max-memory or give a smaller --corpus");
}

void check_memory(const TrainOptions& o, std::uint64_t corpus_bytes, std::size_t vocab,
                  std::size_t threads) {
    const std::uint64_t need = train_bytes(o, corpus_bytes, vocab, threads);
    if (need <= o.max_memory) return;
    throw Error("training " + sizes_text(o.settings) + " needs about " + byte_size(need) +
                ", more than --max-memory " + byte_size(o.max_memory) +
                "; raise --max-memory or use smaller sizes");
}

void check_training_time(const TrainOptions& o, std::size_t vocab, std::uint64_t first_step,
                         std::size_t threads) {
    if (!o.max_time || (o.time_limit && *o.time_limit <= *o.max_time)) return;
    const std::uint64_t macs = checked_product(
        {training_step_macs(dry_training_model(o.settings, vocab), o.settings.sizes.context,
                            o.settings.batch),
         o.settings.recipe.steps - first_step},
        "training's cost");
    check_time(macs, threads, macs_per_thread_second(Form::Packed, AttentionPath::Standard),
               o.max_time, "fewer --steps, smaller sizes or a --time-limit cost less");
}

}  // namespace mha
