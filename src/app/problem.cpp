// Files first (they fix B, N, M and d_model), then seeds for whatever is missing.

#include "app/problem.h"

#include <algorithm>

#include "core/checked.h"
#include "core/error.h"
#include "core/parallel.h"
#include "io/init.h"
#include "io/masks.h"
#include "io/npy.h"
#include "io/weights.h"

namespace mha {

namespace {

// A size from a file wins; an option that says otherwise is an error.
std::size_t reconcile(const std::optional<std::size_t>& option, const char* flag,
                      std::size_t from_file, const std::string& file, const char* name) {
    if (option && *option != from_file) {
        throw Error(std::string(flag) + " " + std::to_string(*option) + " disagrees with " + file +
                    ", which has " + name + "=" + std::to_string(from_file));
    }
    return from_file;
}

Tensor load_input(const std::string& path, const char* what) {
    const npy::Array array = npy::read_npy(path);
    if (array.shape.size() != 3) {
        throw Error(path + ": " + what +
                    " must have 3 dimensions (B, length, features), got shape " +
                    to_string(array.shape));
    }
    if (array.kind != 'f') {
        throw Error(path + ": " + what + " is " + array.dtype_name() +
                    ", expected float32 or float64");
    }
    return npy::to_tensor(array);
}

struct Sources {
    std::optional<Weights> weights;
    std::optional<Inputs> inputs;
};

Sources load_files(const Config& c) {
    Sources sources;
    if (!c.weights_path.empty()) sources.weights = load_weights(c.weights_path);
    if (!c.input_path.empty()) {
        const Tensor x = load_input(c.input_path, "the input");
        if (c.key_path.empty()) {
            sources.inputs = Inputs{x, x, x};
        } else {
            sources.inputs =
                Inputs{x, load_input(c.key_path, "the key"), load_input(c.value_path, "the value")};
        }
    }
    return sources;
}

Sizes resolve_sizes(const Config& c, const Sources& files) {
    Sizes s{};
    if (files.weights) {
        s.d_model =
            reconcile(c.d_model, "--d-model", files.weights->d_model(), c.weights_path, "d_model");
        s.kdim = files.weights->kdim();
        s.vdim = files.weights->vdim();
    } else if (files.inputs) {
        s.d_model =
            reconcile(c.d_model, "--d-model", files.inputs->x_q.size(2), c.input_path, "d_model");
        s.kdim = files.inputs->x_k.size(2);
        s.vdim = files.inputs->x_v.size(2);
    } else {
        s.d_model = s.kdim = s.vdim = c.d_model.value_or(default_d_model);
    }
    if (files.inputs) {
        const Tensor& x = files.inputs->x_q;
        s.batch = reconcile(c.batch, "--batch", x.size(0), c.input_path, "B");
        s.seq_len = reconcile(c.seq_len, "--seq-len", x.size(1), c.input_path, "N");
        const std::string& kv_file = c.key_path.empty() ? c.input_path : c.key_path;
        s.kv_len = reconcile(c.kv_len, "--kv-len", files.inputs->x_k.size(1), kv_file, "M");
    } else {
        s.batch = c.batch.value_or(default_batch);
        s.seq_len = c.seq_len.value_or(default_seq_len);
        s.kv_len = c.kv_len.value_or(s.seq_len);
    }
    s.heads = c.heads;
    return s;
}

// Waking a worker costs more than a small problem's whole forward pass on a busy
// machine, so by default each thread gets at least this many multiply-adds.
constexpr std::uint64_t macs_per_thread = std::uint64_t(1) << 23;

std::size_t default_threads(const Sizes& s) {
    return std::max<std::uint64_t>(1, std::min<std::uint64_t>(hardware_threads(),
                                                              forward_macs(s) / macs_per_thread));
}

std::string mebibytes(std::uint64_t bytes) {
    return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB";
}

// The inputs, the weights and what forward() allocates on the path with the threads.
std::uint64_t needed_bytes(const Sizes& s, AttentionPath path, std::size_t threads) {
    const std::string what = "the memory for this configuration";
    const std::uint64_t inputs = checked_product(
        {sizeof(float), checked_sum({checked_product({s.batch, s.seq_len, s.d_model}, what),
                                     checked_product({s.batch, s.kv_len, s.kdim + s.vdim}, what)},
                                    what)},
        what);
    const std::uint64_t weights =
        checked_product({sizeof(float), s.d_model,
                         checked_sum({2 * std::uint64_t(s.d_model), s.kdim, s.vdim, 4}, what)},
                        what);
    return checked_sum({inputs, weights, forward_bytes(s, path, threads)}, what);
}

const char* path_name(AttentionPath path) {
    return path == AttentionPath::Standard ? "standard" : "streaming";
}

// --attention, or auto: the standard path when something shows or saves the weights
// and it fits the budget, the streaming path otherwise.
AttentionPath choose_path(const Config& c, const Sizes& s, std::size_t threads) {
    if (c.attention) return *c.attention;
    const bool weights_shown = c.trace || c.format == Format::Json || !c.save_path.empty();
    const bool fits = needed_bytes(s, AttentionPath::Standard, threads) <= c.max_memory;
    return (weights_shown && fits) || !c.save_path.empty() ? AttentionPath::Standard
                                                           : AttentionPath::Streaming;
}

// Refuses before allocating anything large.
void check_budget(const Sizes& s, AttentionPath path, std::size_t threads,
                  std::uint64_t max_memory) {
    const std::uint64_t total = needed_bytes(s, path, threads);
    if (total > max_memory) {
        throw Error("this configuration needs " + mebibytes(total) + " on the " +
                    path_name(path) + " path" +
                    " (B=" + std::to_string(s.batch) + " N=" + std::to_string(s.seq_len) +
                    " M=" + std::to_string(s.kv_len) + " d_model=" + std::to_string(s.d_model) +
                    " h=" + std::to_string(s.heads) + "), more than --max-memory " +
                    mebibytes(max_memory) + "; raise --max-memory or shrink the sizes");
    }
}

Masks load_masks(const Config& c) {
    Masks masks;
    masks.causal = c.causal;
    if (!c.mask_path.empty())
        load_attn_mask(c.mask_path, c.mask_means.value_or(MaskMeaning::Block), masks);
    if (!c.key_padding_mask_path.empty()) load_key_padding_mask(c.key_padding_mask_path, masks);
    return masks;
}

std::string seeded(std::uint64_t seed) { return "seeded (seed " + std::to_string(seed) + ")"; }

RunInfo describe(const Config& c, const Sizes& s, const Problem& p) {
    RunInfo info;
    info.batch = s.batch;
    info.seq_len = s.seq_len;
    info.kv_len = s.kv_len;
    info.d_model = s.d_model;
    info.heads = s.heads;
    info.kdim = s.kdim;
    info.vdim = s.vdim;
    info.self_attention = p.inputs.self_attention();
    info.bias = p.weights.any_bias();
    info.causal = c.causal;
    info.threads = p.options.threads;
    info.parameters = p.weights.parameter_count();
    info.weights_source = c.weights_path.empty() ? seeded(c.seed) : c.weights_path;
    info.inputs_source = c.input_path.empty() ? seeded(c.seed)
                         : c.key_path.empty()
                             ? c.input_path
                             : c.input_path + ", " + c.key_path + ", " + c.value_path;
    info.values = c.values;
    return info;
}

}  // namespace

Problem build_problem(const Config& c) {
    Sources files = load_files(c);
    const Sizes s = resolve_sizes(c, files);
    if (s.d_model % s.heads != 0) {
        throw Error("d_model " + std::to_string(s.d_model) + " is not divisible by --heads " +
                    std::to_string(s.heads) + "; d_k = d_model / h must be a whole number");
    }
    const std::size_t threads =
        std::min(c.threads ? c.threads : default_threads(s), s.batch * s.heads);
    const AttentionPath path = choose_path(c, s, threads);
    check_budget(s, path, threads, c.max_memory);

    Problem p;
    p.weights =
        files.weights ? *files.weights : seeded_weights(s.d_model, c.bias, c.random_bias, c.seed);
    const bool self = s.kv_len == s.seq_len && s.kdim == s.d_model && s.vdim == s.d_model;
    p.inputs = files.inputs ? *files.inputs : seeded_inputs(s, self, c.seed);
    p.masks = load_masks(c);
    check_shapes(p.weights, p.inputs, p.masks, s.heads);

    p.options.heads = s.heads;
    p.options.threads = threads;
    p.options.zero_masked_rows = c.zero_masked_rows;
    p.options.path = path;
    p.info = describe(c, s, p);
    return p;
}

}  // namespace mha
