// Files first (they fix B, N, M and d_model), then seeds for whatever is missing.

#include "app/problem.h"

#include <utility>

#include "app/budget.h"
#include "app/variants.h"
#include "core/decode.h"
#include "core/error.h"
#include "io/demo_heads.h"
#include "io/finite.h"
#include "io/init.h"
#include "io/masks.h"
#include "io/npy.h"
#include "io/block_weights.h"
#include "io/text.h"
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

Tensor load_input(const std::string& path, const char* what, std::uint64_t max_memory) {
    const npy::Array array = npy::read_npy(path, max_memory);
    if (array.shape.size() != 3) {
        throw Error(path + ": " + what +
                    " must have 3 dimensions (B, length, features), got shape " +
                    to_string(array.shape));
    }
    if (array.kind != 'f') {
        throw Error(path + ": " + what + " is " + array.dtype_name() +
                    ", expected float32 or float64");
    }
    check_finite(array, path + ": " + what, Infinities::None);
    return npy::to_tensor(array);
}

struct Sources {
    std::optional<Weights> weights;
    std::optional<BlockWeights> block;
    std::optional<Inputs> inputs;
};

Sources load_files(const Config& c) {
    Sources sources;
    if (!c.weights_path.empty() && c.block) {
        BlockState state = load_block(c.weights_path);
        sources.weights = std::move(state.attention);
        sources.block = std::move(state.block);
    } else if (!c.weights_path.empty()) {
        sources.weights = load_weights(c.weights_path, c.max_memory);
    }
    if (c.text) {
        const std::size_t width =
            sources.weights ? sources.weights->d_model() : c.d_model.value_or(text_d_model);
        const Tensor x = text_input(tokenize(*c.text), width);
        sources.inputs = Inputs{x, x, x};
    }
    if (!c.input_path.empty()) {
        const Tensor x = load_input(c.input_path, "the input", c.max_memory);
        if (c.key_path.empty()) {
            sources.inputs = Inputs{x, x, x};
        } else {
            sources.inputs = Inputs{x, load_input(c.key_path, "the key", c.max_memory),
                                    load_input(c.value_path, "the value", c.max_memory)};
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
        s.d_model = c.text ? files.inputs->x_q.size(2)
                           : reconcile(c.d_model, "--d-model", files.inputs->x_q.size(2),
                                       c.input_path, "d_model");
        s.kdim = files.inputs->x_k.size(2);
        s.vdim = files.inputs->x_v.size(2);
    } else {
        s.d_model = s.kdim = s.vdim = c.d_model.value_or(default_d_model);
    }
    if (files.inputs) {
        const std::string& input_name = c.text ? std::string("--text") : c.input_path;
        const Tensor& x = files.inputs->x_q;
        s.batch = reconcile(c.batch, "--batch", x.size(0), input_name, "B");
        s.seq_len = reconcile(c.seq_len, "--seq-len", x.size(1), input_name, "N");
        const std::string& kv_file = c.key_path.empty() ? input_name : c.key_path;
        s.kv_len = reconcile(c.kv_len, "--kv-len", files.inputs->x_k.size(1), kv_file, "M");
    } else {
        s.batch = c.batch.value_or(default_batch);
        s.seq_len = c.seq_len.value_or(default_seq_len);
        s.kv_len = c.kv_len.value_or(s.seq_len);
    }
    s.heads = c.heads;
    s.kv_heads = c.kv_heads.value_or(c.heads);
    if (files.weights && s.d_model % s.heads == 0) {
        const std::size_t d_k = s.d_model / s.heads, rows = files.weights->kv_width();
        if (rows % d_k != 0 || rows < d_k) {
            throw Error(c.weights_path + ": W_k has " + std::to_string(rows) +
                        " rows, not a whole number of heads of d_k = " + std::to_string(d_k));
        }
        s.kv_heads = reconcile(c.kv_heads, "--kv-heads", rows / d_k, c.weights_path, "G");
    }
    return s;
}


// looks_keep: see Problem::mask_looks_keep.
Masks load_masks(const Config& c, bool& looks_keep) {
    Masks masks;
    masks.causal = c.causal;
    if (!c.mask_path.empty())
        looks_keep = load_attn_mask(c.mask_path, c.mask_means.value_or(MaskMeaning::Block),
                                    c.max_memory, masks);
    if (!c.key_padding_mask_path.empty())
        load_key_padding_mask(c.key_padding_mask_path, c.max_memory, masks);
    return masks;
}

// --head and --ablate-head name heads 0..h-1.
void check_head_numbers(const Config& c, std::size_t heads) {
    std::vector<std::pair<const char*, std::size_t>> named;
    for (std::size_t head : c.view_heads) named.push_back({"--head", head});
    if (c.ablate_head) named.push_back({"--ablate-head", *c.ablate_head});
    for (const auto& [option, head] : named) {
        if (head >= heads) {
            throw Error(std::string(option) + " " + std::to_string(head) +
                        " is not a head: the heads are 0.." + std::to_string(heads - 1));
        }
    }
}

std::string seeded(std::uint64_t seed) { return "seeded (seed " + std::to_string(seed) + ")"; }

// The sizes and options, common to computed and shapes-only runs.
RunInfo describe_sizes(const Config& c, const Sizes& s) {
    RunInfo info;
    info.batch = s.batch;
    info.seq_len = s.seq_len;
    info.kv_len = s.kv_len;
    info.d_model = s.d_model;
    info.heads = s.heads;
    info.kv_heads = s.kv_heads;
    info.kdim = s.kdim;
    info.vdim = s.vdim;
    info.causal = c.causal;
    info.values = c.values;
    return info;
}

RunInfo describe(const Config& c, const Sizes& s, const Problem& p) {
    RunInfo info = describe_sizes(c, s);
    info.self_attention = p.inputs.self_attention();
    info.bias = p.weights.any_bias();
    info.threads = p.options.threads;
    info.parameters = p.weights.parameter_count();
    info.weights_source = c.demo_heads             ? "demo heads (constructed)"
                          : c.weights_path.empty() ? seeded(c.seed)
                                                   : c.weights_path;
    if (c.text) info.tokens = tokenize(*c.text);
    if (c.demo_heads) info.head_names = demo_head_names();
    info.inputs_source = c.text ? "--text, " + std::to_string(s.seq_len) + " tokens"
                         : c.input_path.empty() ? seeded(c.seed)
                         : c.key_path.empty()
                             ? c.input_path
                             : c.input_path + ", " + c.key_path + ", " + c.value_path;
    return info;
}

// --block's feed-forward width: the state dict's, else --d-ff, else 4·d_model.
std::size_t block_width(const Config& c, const Sizes& s, const Sources& files) {
    if (files.block) return reconcile(c.d_ff, "--d-ff", files.block->d_ff(), c.weights_path, "d_ff");
    return c.d_ff.value_or(4 * s.d_model);
}

// Throws when the heads do not split d_model, or the key/value heads the heads.
void check_heads(const Sizes& s) {
    if (s.d_model % s.heads != 0) {
        throw Error("d_model " + std::to_string(s.d_model) + " is not divisible by --heads " +
                    std::to_string(s.heads) + "; d_k = d_model / h must be a whole number");
    }
    if (s.kv_heads == 0 || s.heads % s.kv_heads != 0) {
        throw Error("--kv-heads " + std::to_string(s.kv_heads) + " does not divide --heads " +
                    std::to_string(s.heads) + "; each key/value head serves h / G query heads");
    }
}

}  // namespace

ShapesProblem build_shapes(const Config& c) {
    const Sizes s = resolve_sizes(c, Sources{});
    check_heads(s);
    ShapesProblem p;
    p.spec.sizes = s;
    p.spec.form = c.form;
    p.spec.path = c.attention.value_or(AttentionPath::Standard);
    p.spec.self_attention = s.kv_len == s.seq_len;
    p.spec.bias = {c.bias, c.bias, c.bias, c.bias};
    p.spec.masks.causal = c.causal;
    p.spec.scale = !c.no_scale;
    p.info = describe_sizes(c, s);
    p.info.self_attention = p.spec.self_attention;
    p.info.bias = c.bias;
    p.info.threads = 1;
    p.info.parameters = parameter_count(s, c.bias);
    p.info.weights_source = p.info.inputs_source = "none (--shapes-only)";
    p.info.shapes_only = true;
    p.info.activation_bytes = c.form == Form::Decode ? decode_bytes(s) : forward_bytes(s, p.spec.path, 1);
    p.info.total_macs = planned_macs(plan_pass(p.spec));
    p.info.variant = variant_description(c, 0);
    return p;
}

Problem build_problem(const Config& c) {
    Sources files = load_files(c);
    const Sizes s = resolve_sizes(c, files);
    check_heads(s);
    const std::size_t d_ff = block_width(c, s, files);
    bool mask_looks_keep = false;
    Masks masks = load_masks(c, mask_looks_keep);
    const RunPlan plan =
        plan_run(c, s, d_ff, sizeof(float) * (masks.attn_mask.numel() + masks.key_padding.numel()));

    Problem p;
    if (c.block) p.block = files.block ? *files.block : seeded_block(s.d_model, d_ff, c.seed);
    p.weights = c.demo_heads      ? demo_weights(s.d_model, s.heads, s.seq_len)
                : files.weights ? *files.weights
                                : seeded_weights(s.d_model, s.kv_heads * (s.d_model / s.heads),
                                                 c.bias, c.random_bias, c.seed);
    const bool self = s.kv_len == s.seq_len && s.kdim == s.d_model && s.vdim == s.d_model;
    p.inputs = files.inputs ? *files.inputs : seeded_inputs(s, self, c.seed);
    p.masks = std::move(masks);
    p.mask_looks_keep = mask_looks_keep;
    check_shapes(p.weights, p.inputs, p.masks, s.heads);

    p.options.heads = s.heads;
    p.options.threads = plan.threads;
    p.options.zero_masked_rows = c.zero_masked_rows;
    p.options.scale = !c.no_scale;
    check_head_numbers(c, s.heads);
    p.options.path = plan.path;
    p.info = describe(c, s, p);
    if (p.block) p.info.parameters += p.block->parameter_count();
    p.info.variant = variant_description(c, d_ff);
    return p;
}

}  // namespace mha
