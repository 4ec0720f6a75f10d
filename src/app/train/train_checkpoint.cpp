// The checkpoint's arrays: the model's own, then train.* (moments, step, settings, history).

#include "app/train/train_checkpoint.h"
#include "app/train/train_options.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "core/error.h"
#include "core/train/parameters.h"
#include "io/model_file.h"
#include "io/npy.h"
#include "show/format.h"

namespace mha {

namespace {

using Arrays = std::map<std::string, npy::Array>;

const std::string prefix = trainer_prefix;

npy::Array wide(Shape shape, std::vector<double> values) {
    return {std::move(shape), 'f', 8, std::move(values)};
}

npy::Array integers(std::vector<double> values) {
    const std::size_t n = values.size();
    return {{n}, 'i', 8, std::move(values)};
}

// The 64 bits of a value as two 32-bit halves, each exact in a double.
std::vector<double> halves(std::uint64_t value) {
    return {double(value & 0xFFFFFFFFu), double(value >> 32)};
}

std::uint64_t joined(const std::vector<double>& halves, std::size_t at) {
    return std::uint64_t(halves[at]) | (std::uint64_t(halves[at + 1]) << 32);
}

// [layer][head] scores of every evaluation as one (E, L, H) array.
npy::Array scores(const std::vector<TrainEvaluation>& history, const ModelSizes& s,
                  std::vector<std::vector<double>> TrainEvaluation::*field) {
    npy::Array out = wide({history.size(), s.layers, s.heads}, {});
    for (const TrainEvaluation& e : history)
        for (const std::vector<double>& layer : e.*field)
            out.values.insert(out.values.end(), layer.begin(), layer.end());
    return out;
}

// A value mha train could not have written (out of its option's bounds, or not finite):
// "PATH: train.NAME holds V; mha train writes RANGE (a damaged file?)".
double checked(const std::string& path, const std::string& name, double value, double low,
               double high, const char* range) {
    if (!(value >= low && value <= high)) {  // NaN fails both
        throw Error(path + ": " + prefix + name + " holds " + compact(value) +
                    "; mha train writes " + range + " (a damaged file?)");
    }
    return value;
}

constexpr double max_seconds = 1e9;  // about 32 years

class Reader {
public:
    Reader(const Arrays& arrays, const std::string& path) : arrays_(arrays), path_(path) {}

    // train.<name>, of `kind` with `count` values (any count when 0).
    const std::vector<double>& values(const std::string& name, char kind, std::size_t count) {
        const auto found = arrays_.find(prefix + name);
        if (found == arrays_.end()) {
            throw Error(path_ + ": no array '" + prefix + name +
                        "'; --resume reads a file mha train wrote (a damaged one, or a model "
                        "file without the trainer's state?)");
        }
        const npy::Array& a = found->second;
        const bool negative = kind == 'i' && std::any_of(a.values.begin(), a.values.end(),
                                                         [](double v) { return v < 0; });
        if (a.kind != kind || (count != 0 && a.values.size() != count) || negative) {
            throw Error(path_ + ": array '" + prefix + name + "' is " + a.dtype_name() +
                        " of shape " + to_string(a.shape) +
                        ", not what mha train writes (a damaged file?)");
        }
        return a.values;
    }

    Tensor tensor(const std::string& name, const Shape& shape) {
        const std::vector<double>& v = values(name, 'f', element_count(shape));
        return Tensor(shape, std::vector<float>(v.begin(), v.end()));
    }

private:
    const Arrays& arrays_;
    const std::string& path_;
};

}  // namespace

void save_checkpoint(const std::string& path, const Checkpoint& c) {
    Model model = c.state.model;  // shares the tensors: model_parameters needs a mutable model
    std::vector<std::pair<std::string, Tensor>> tensors = model_arrays(model, "");
    const std::vector<Parameter> params = model_parameters(model);
    for (std::size_t i = 0; i < params.size(); ++i) {
        tensors.emplace_back(prefix + "adam_m." + params[i].name, c.state.moments[i].m);
        tensors.emplace_back(prefix + "adam_v." + params[i].name, c.state.moments[i].v);
    }
    const ModelSizes& s = c.settings.sizes;
    const TrainRecipe& r = c.settings.recipe;
    std::vector<std::pair<std::string, npy::Array>> others = model_integer_arrays(model);
    std::vector<double> seed = halves(c.settings.seed), corpus = halves(c.corpus_fingerprint);
    corpus.insert(corpus.begin(), double(c.corpus_characters));
    others.emplace_back(prefix + "step", integers({double(c.state.step)}));
    others.emplace_back(prefix + "eval_every", integers({double(c.eval_every)}));
    others.emplace_back(
        prefix + "sizes",
        integers({double(s.layers), double(s.d_model), double(s.heads), double(s.d_ff),
                  double(s.context), double(c.settings.batch), double(r.steps), double(r.warmup)}));
    others.emplace_back(prefix + "seed", integers(seed));
    others.emplace_back(prefix + "corpus", integers(corpus));
    others.emplace_back(prefix + "recipe", wide({6}, {r.lr, r.clip, r.adamw.beta1, r.adamw.beta2,
                                                      r.adamw.eps, r.adamw.weight_decay}));
    others.emplace_back(prefix + "seconds", wide({1}, {c.seconds}));
    others.emplace_back(prefix + "step_losses", wide({c.step_losses.size()}, c.step_losses));
    npy::Array history = wide({c.history.size(), 4}, {});
    for (const TrainEvaluation& e : c.history)
        history.values.insert(history.values.end(),
                              {double(e.step), e.seconds, e.loss, e.val_loss});
    others.emplace_back(prefix + "history", std::move(history));
    others.emplace_back(prefix + "prev_token", scores(c.history, s, &TrainEvaluation::prev_token));
    others.emplace_back(prefix + "induction", scores(c.history, s, &TrainEvaluation::induction));
    npy::write_npz(path, tensors, others);
}

Checkpoint load_checkpoint(const std::string& path, std::uint64_t max_memory) {
    return checkpoint_from_arrays(npy::read_npz(path, Ledger(max_memory)), path);
}

Checkpoint checkpoint_from_arrays(const Arrays& arrays, const std::string& path) {
    Checkpoint c;
    Reader read(arrays, path);
    const std::vector<double> sizes = read.values("sizes", 'i', 8);
    const char* size_names[] = {"sizes[0] (--layers)", "sizes[1] (--d-model)",
                                "sizes[2] (--heads)",  "sizes[3] (--d-ff)",
                                "sizes[4] (--context)", "sizes[5] (--batch)",
                                "sizes[6] (--steps)",  "sizes[7] (warm-up steps)"};
    const double size_lows[] = {1, 1, 1, 1, min_context, 1, 1, 0};
    const double size_limits[] = {256, 65536, 4096, 1 << 20, max_context, 65536, 1e9, 1e9};
    for (std::size_t i = 0; i < 8; ++i)
        checked(path, size_names[i], sizes[i], size_lows[i], size_limits[i],
                "the bounds its options take");
    c.state = start_training(model_from_arrays(arrays, path));
    const Model& m = c.state.model;
    ModelSizes& s = c.settings.sizes;
    s = {std::size_t(sizes[0]), std::size_t(sizes[1]), std::size_t(sizes[2]), std::size_t(sizes[3]),
         std::size_t(sizes[4])};
    const bool same_heads = !m.layers.empty() && [&] {
        for (const ModelLayer& layer : m.layers)
            if (layer.heads != s.heads || layer.block.d_ff() != s.d_ff) return false;
        return true;
    }();
    if (m.layers.size() != s.layers || m.d_model() != s.d_model || m.context() != s.context ||
        !same_heads) {
        throw Error(path +
                    ": the model's arrays do not have the sizes train.sizes records "
                    "(a damaged file?)");
    }
    c.settings.batch = std::size_t(sizes[5]);
    TrainRecipe& r = c.settings.recipe;
    r.steps = std::size_t(sizes[6]);
    r.warmup = std::size_t(sizes[7]);
    const std::vector<double> recipe = read.values("recipe", 'f', 6);
    const double huge = std::numeric_limits<double>::max();
    r.lr = checked(path, "recipe[0] (--lr)", recipe[0], 1e-300, huge, "a positive rate");
    r.clip = checked(path, "recipe[1] (clip)", recipe[1], 1e-300, huge, "a positive norm");
    r.adamw = {checked(path, "recipe[2] (beta1)", recipe[2], 0, 0.999999999, "0 <= beta < 1"),
               checked(path, "recipe[3] (beta2)", recipe[3], 0, 0.999999999, "0 <= beta < 1"),
               checked(path, "recipe[4] (eps)", recipe[4], 1e-300, huge, "a positive eps"),
               checked(path, "recipe[5] (weight decay)", recipe[5], 0, huge,
                       "a finite decay of 0 or more")};
    c.settings.seed = joined(read.values("seed", 'i', 2), 0);
    const std::vector<double> corpus = read.values("corpus", 'i', 3);
    c.corpus_characters = std::uint64_t(corpus[0]);
    c.corpus_fingerprint = joined(corpus, 1);
    c.state.step = std::uint64_t(read.values("step", 'i', 1)[0]);
    if (arrays.count(prefix + "eval_every") != 0)  // written since mha train saves it
        c.eval_every =
            std::uint64_t(checked(path, "eval_every", read.values("eval_every", 'i', 1)[0], 1,
                                  double(r.steps), "1 to --steps"));
    c.seconds = checked(path, "seconds", read.values("seconds", 'f', 1)[0], 0, max_seconds,
                        "the seconds trained, 0 to 1e9");
    c.step_losses = read.values("step_losses", 'f', 0);
    for (double loss : c.step_losses)
        checked(path, "step_losses", loss, 0, huge, "finite losses of 0 or more");
    if (c.step_losses.size() != c.state.step || c.state.step > r.steps) {
        throw Error(path + ": train.step_losses holds " + std::to_string(c.step_losses.size()) +
                    " losses for step " + std::to_string(c.state.step) + " of " +
                    std::to_string(r.steps) + " (a damaged file?)");
    }
    Model& model = c.state.model;
    const std::vector<Parameter> params = model_parameters(model);
    for (std::size_t i = 0; i < params.size(); ++i) {
        c.state.moments[i].m = read.tensor("adam_m." + params[i].name, params[i].shape);
        c.state.moments[i].v = read.tensor("adam_v." + params[i].name, params[i].shape);
    }
    const std::vector<double>& history = read.values("history", 'f', 0);
    const std::size_t evaluations = history.size() / 4, cells = s.layers * s.heads;
    const std::vector<double>& prev = read.values("prev_token", 'f', evaluations * cells);
    const std::vector<double>& induction = read.values("induction", 'f', evaluations * cells);
    for (double score : prev) checked(path, "prev_token", score, 0, 1, "scores from 0 to 1");
    for (double score : induction) checked(path, "induction", score, 0, 1, "scores from 0 to 1");
    for (std::size_t e = 0; e < evaluations; ++e) {
        TrainEvaluation t;
        const double previous = e == 0 ? 0 : double(c.history.back().step) + 1;
        t.step = std::size_t(checked(path, "history", history[4 * e], previous,
                                     double(c.state.step), "the steps evaluated, in order"));
        t.seconds = checked(path, "history", history[4 * e + 1], 0, max_seconds,
                            "the seconds trained, 0 to 1e9");
        t.loss = history[4 * e + 2];  // NaN at step 0: no step has a loss yet
        if (t.step != 0 || !std::isnan(t.loss))
            checked(path, "history", t.loss, 0, huge, "finite losses");
        t.val_loss = checked(path, "history", history[4 * e + 3], 0, huge, "finite losses");
        for (std::size_t l = 0; l < s.layers; ++l) {
            const std::size_t at = e * cells + l * s.heads;
            t.prev_token.emplace_back(prev.begin() + std::ptrdiff_t(at),
                                      prev.begin() + std::ptrdiff_t(at + s.heads));
            t.induction.emplace_back(induction.begin() + std::ptrdiff_t(at),
                                     induction.begin() + std::ptrdiff_t(at + s.heads));
        }
        c.history.push_back(std::move(t));
    }
    return c;
}

}  // namespace mha
