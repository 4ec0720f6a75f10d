// Files first (they fix B, N, M and d_model), then seeds for whatever is missing.

#include "app/run/problem.h"

#include <algorithm>
#include <utility>

#include "app/run/budget.h"
#include "app/run/kv_ledger.h"
#include "app/run/kv_pool.h"
#include "app/run/kv_quant_options.h"
#include "app/run/layout.h"
#include "app/run/time_guard.h"
#include "app/run/variant_name.h"
#include "core/backward/training_costs.h"
#include "core/checked.h"
#include "core/error.h"
#include "core/forms/mla_decode.h"
#include "core/forms/mla_pass.h"
#include "core/forms/score_bound.h"
#include "core/kernels/kernels.h"
#include "core/tensor/workspace.h"
#include "core/pass/score_rules.h"
#include "core/pass/shape_checks.h"
#include "io/block_weights.h"
#include "io/demo_heads.h"
#include "io/dry.h"
#include "io/finite.h"
#include "io/init.h"
#include "io/masks.h"
#include "io/npy.h"
#include "io/printable.h"
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

// A feature dimension of 0 from a file is refused before anything is printed, naming the
// file and the dimension. Empty batches and sequences are computed, as PyTorch does.
void check_features(const npy::Array& array, const std::string& path, const char* what,
                    const char* feature) {
    if (array.shape.back() == 0) {
        throw Error(path + ": " + what + " has shape " + to_string(array.shape) + ", so " +
                    feature + "=0; every size must be at least 1");
    }
}

// A query, key or value file: float, finite, 2-D (unbatched) or 3-D; feature: the name of
// its last dimension ("d_model", "kdim", "vdim"). The tensor stays for the run: the ledger
// holds its bytes, so the next read gets what is left.
Tensor load_input(const std::string& path, const char* what, const char* feature, bool seq_first,
                  Ledger& ledger) {
    const npy::Array array = npy::read_npy(path, ledger);
    if (array.shape.size() != 2 && array.shape.size() != 3) {
        throw Error(path + ": " + what + " must have 3 dimensions " +
                    layout_shape(input_layout(3, seq_first)) + ", or 2 " +
                    layout_shape(InputLayout::Unbatched) + " unbatched, got shape " +
                    to_string(array.shape));
    }
    check_features(array, path, what, feature);
    const Tensor x = float_tensor(array, path + ": " + what);
    ledger.hold(sizeof(float) * x.numel());
    return x;
}

// --grad-output: dO in the layout --save writes the output in ((B, N, d_model), seq-first
// (N, B, d_model), unbatched (N, d_model)), float and finite, as (B, N, d_model); none without.
Tensor load_grad_output(const Config& c, const Sizes& s, InputLayout layout, Ledger& ledger) {
    if (c.grad_output_path.empty()) return Tensor();
    const std::string& path = c.grad_output_path;
    const npy::Array array = npy::read_npy(path, ledger);
    const std::string what = path + ": --grad-output";
    const Shape expected = layout == InputLayout::SeqFirst ? Shape{s.seq_len, s.batch, s.d_model}
                           : layout == InputLayout::Unbatched
                               ? Shape{s.seq_len, s.d_model}
                               : Shape{s.batch, s.seq_len, s.d_model};
    if (array.shape != expected) {
        const char* names = layout == InputLayout::SeqFirst    ? "(N, B, d_model)"
                            : layout == InputLayout::Unbatched ? "(N, d_model)"
                                                               : "(B, N, d_model)";
        throw Error(what + " has shape " + to_string(array.shape) + ", expected the output's " +
                    names + " = " + to_string(expected));
    }
    const Tensor d_out = float_tensor(array, what);
    ledger.hold(sizeof(float) * d_out.numel());
    return to_batch_first(d_out, layout);
}

// --backward's dO: the --grad-output file's, or seeded standard normal; and how the header
// names its source.
Tensor grad_output_of(const Config& c, const Tensor& loaded, const Sizes& s) {
    return loaded.empty() ? seeded_grad_output(s, c.seed) : loaded;
}
std::string grad_output_source(const Config& c) {
    return c.grad_output_path.empty()
               ? "seeded standard normal (seed " + std::to_string(c.seed) + ")"
               : sanitized(c.grad_output_path);
}

// Keys and values are batched exactly when the query is, as PyTorch requires.
Tensor load_key_or_value(const std::string& path, const char* what, const char* feature,
                         const Config& c, InputLayout layout, Ledger& ledger) {
    const Tensor x = load_input(path, what, feature, c.seq_first, ledger);
    if (input_layout(x.dim(), c.seq_first) != layout) {
        throw Error(path + ": " + what + " has shape " + to_string(x.shape()) + " but the query " +
                    c.input_path + " is " + (x.dim() == 2 ? "batched" : "unbatched") +
                    "; give it as " + layout_shape(layout) + " like the query");
    }
    return to_batch_first(x, layout);
}

struct Sources {
    std::optional<Weights> weights;
    std::optional<BlockWeights> block;
    std::optional<std::size_t> num_heads;           // the state dict's optional num_heads entry
    bool conv1d = false;                            // GPT-2's c_attn and c_proj, read transposed
    StateDictNames names;                           // how the state dict's arrays were read
    BlockNaming block_naming = BlockNaming::Torch;  // --block: the file's naming
    std::optional<Inputs> inputs;
    InputLayout layout = InputLayout::BatchFirst;
};

// Each file is read within what the files before it left of --max-memory.
Sources load_files(const Config& c, Ledger& ledger) {
    Sources sources;
    if (!c.weights_path.empty() && c.block) {
        BlockState state = load_block(c.weights_path, ledger, c.weights_prefix);
        sources.weights = std::move(state.attention);
        sources.block = std::move(state.block);
        sources.num_heads = state.num_heads;
        sources.names = std::move(state.attention_names);
        sources.block_naming = state.naming;
        ledger.hold(sizeof(float) *
                    (sources.weights->parameter_count() + sources.block->parameter_count()));
    } else if (!c.weights_path.empty() && c.form != Form::Mla) {  // MLA reads its own names
        LoadedWeights loaded = load_weights(c.weights_path, ledger, c.weights_prefix, c.heads);
        sources.weights = std::move(loaded.weights);
        sources.num_heads = loaded.num_heads;
        sources.conv1d = loaded.conv1d;
        sources.names = std::move(loaded.names);
        ledger.hold(sizeof(float) * sources.weights->parameter_count());
    }
    if (c.text) {
        const std::size_t width =
            sources.weights ? sources.weights->d_model() : c.d_model.value_or(text_d_model);
        const std::vector<std::string> tokens = tokenize(*c.text);
        // x (1, N, d_model) and the positional encodings (N, d_model / 2) while it is built
        const std::uint64_t bytes = checked_product(
            {sizeof(float), tokens.size(), width + width / 2}, "the memory for --text");
        ledger.check(bytes, "--text",
                     std::to_string(tokens.size()) + " tokens of width " + std::to_string(width) +
                         " need " + byte_size(bytes),
                     "a shorter --text");
        const Tensor x = text_input(tokens, width);
        ledger.hold(sizeof(float) * x.numel());
        sources.inputs = Inputs{x, x, x};
    }
    if (!c.input_path.empty()) {
        const Tensor file = load_input(c.input_path, "the input", "d_model", c.seq_first, ledger);
        sources.layout = input_layout(file.dim(), c.seq_first);
        const Tensor x = to_batch_first(file, sources.layout);
        if (c.key_path.empty()) {
            sources.inputs = Inputs{x, x, x};
        } else {
            sources.inputs = Inputs{
                x, load_key_or_value(c.key_path, "the key", "kdim", c, sources.layout, ledger),
                load_key_or_value(c.value_path, "the value", "vdim", c, sources.layout, ledger)};
        }
    }
    return sources;
}

// h with a state dict: --heads, or its num_heads entry; the two must agree. A state dict
// holds the projections, not how their rows are split into heads, so nothing else tells.
std::size_t heads_with_weights(const Config& c, const Sources& files) {
    const std::size_t E = files.weights->d_model(), rows = files.weights->kv_width();
    if (files.num_heads) {
        return reconcile(c.heads, "--heads", *files.num_heads, c.weights_path, "num_heads");
    }
    if (c.heads) return *c.heads;
    throw Error(c.weights_path + ": give --heads (the module's num_heads): a state dict saves " +
                "the projection matrices (d_model " + std::to_string(E) +
                ") but not how their rows split into heads, so any h dividing " +
                std::to_string(E) + " would fit" +
                (rows != E
                     ? " (W_k's " + std::to_string(rows) + " rows are G·d_k: G follows from h)"
                     : std::string()) +
                "; or save num_heads=H in the .npz");
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
    s.heads = files.weights ? heads_with_weights(c, files) : c.heads.value_or(default_heads);
    s.kv_heads = c.kv_heads.value_or(s.heads);
    s.head_dim = c.head_dim.value_or(s.heads > 0 ? s.d_model / s.heads : 0);
    if (files.weights && files.weights->q_width() % s.heads == 0) {
        s.head_dim = reconcile(c.head_dim, "--head-dim", files.weights->q_width() / s.heads,
                               c.weights_path, "d_k");  // W_q's rows / h
        const std::size_t d_k = s.head_dim, rows = files.weights->kv_width();
        if (rows % d_k != 0 || rows < d_k) {
            throw Error(c.weights_path + ": W_k has " + std::to_string(rows) +
                        " rows, not a whole number of heads of d_k = " + std::to_string(d_k));
        }
        s.kv_heads = reconcile(c.kv_heads, "--kv-heads", rows / d_k, c.weights_path, "G");
    }
    return s;
}

// What steps 7-8 apply, from the options; load_masks adds the mask files.
Masks masks_of(const Config& c) {
    Masks masks;
    masks.causal = c.causal;
    masks.causal_align = c.causal_align;
    c.scores.apply(masks);
    return masks;
}

// The masks in the pass's shapes: 4-D attn_masks broadcast, an unbatched padding mask (M)
// as (1, M). looks_keep: see Problem::mask_looks_keep.
Masks load_masks(const Config& c, const Sizes& s, InputLayout layout, Ledger& ledger,
                 bool& looks_keep) {
    Masks masks = masks_of(c);
    if (!c.mask_path.empty()) {
        looks_keep =
            load_attn_mask(c.mask_path, c.mask_means.value_or(MaskMeaning::Block), ledger, masks);
        masks.attn_mask = broadcast_attn_mask(masks.attn_mask, s.batch, s.heads);
        ledger.hold(sizeof(float) * masks.attn_mask.numel());
    }
    if (!c.key_padding_mask_path.empty()) {
        load_key_padding_mask(c.key_padding_mask_path, ledger, masks);
        if (layout == InputLayout::Unbatched) {
            masks.key_padding = unbatched_key_padding(masks.key_padding);
        }
    }
    return masks;
}

std::optional<Rope> rope_of(const Config& c) {
    if (!c.rope) return std::nullopt;
    return Rope{*c.rope, c.rope_theta.value_or(10000.0)};
}

// MLA's RoPE on its decoupled d_R part: the half layout, as DeepSeek-V2 turns it.
Rope mla_rope(const Config& c) { return Rope{RopeLayout::Half, c.rope_theta.value_or(10000.0)}; }

// QK-norm's weights: the state dict's, or ones for seeded weights; refused when the state
// dict and --qk-norm disagree.
void set_qk_norm(const Config& c, const Sizes& s, bool from_file, Weights& w) {
    if (from_file && c.qk_norm && w.q_norm.empty()) {
        throw Error(c.weights_path +
                    ": --qk-norm needs q_norm.weight and k_norm.weight of shape (d_k) = (" +
                    std::to_string(s.d_k()) + ") in the state dict");
    }
    if (from_file && !c.qk_norm && !w.q_norm.empty()) {
        throw Error(c.weights_path +
                    " has q_norm.weight and k_norm.weight: give --qk-norm to apply them");
    }
    if (!from_file && c.qk_norm) {
        w.q_norm = Tensor({s.d_k()}, std::vector<float>(s.d_k(), 1.0f));
        w.k_norm = w.q_norm;
    }
}

// The output gate (--gate): the state dict's attn_gate, or seeded as W_q is, (h·d_k or h,
// d_model); refused when the state dict and --gate disagree.
void set_gate(const Config& c, const Sizes& s, bool from_file, Weights& w) {
    const std::size_t rows = c.gate.value_or(false) ? s.heads : s.inner();
    if (from_file && (c.gate.has_value() != w.gated() || (c.gate && w.w_g.size(0) != rows))) {
        throw Error(c.weights_path + (w.gated() ? " has a gate of " + std::to_string(w.w_g.size(0)) +
                                                      " rows (attn_gate.weight): "
                                                : " has no gate (attn_gate.weight): ") +
                    "--gate elementwise needs (h·d_k, d_model) = (" + std::to_string(s.inner()) +
                    ", " + std::to_string(s.d_model) + "), --gate headwise (h, d_model) = (" +
                    std::to_string(s.heads) + ", " + std::to_string(s.d_model) + ")");
    }
    if (from_file || !c.gate) return;
    const Weights seeded = seeded_weights(s.d_model, rows, rows, c.bias, c.random_bias, c.seed + 1);
    w.w_g = seeded.w_q;
    w.b_g = seeded.b_q;
}

// add_bias_kv's extra position goes into the packed pass (check_pass refuses a causal rule).
void check_bias_kv(const Config& c, const Weights& w) {
    if (w.bias_k.empty()) return;
    if (places_keys(c)) {
        throw Error(c.weights_path +
                    " has bias_k and bias_v (add_bias_kv=True): --rope, --alibi "
                    "and --window place keys by position; the key/value position they append has "
                    "none");
    }
    if (c.form != Form::Packed || c.block) {
        throw Error(c.weights_path +
                    " has bias_k and bias_v (add_bias_kv=True), which the packed "
                    "pass appends to K and V; it cannot be combined with --decode, --fused-qkv, "
                    "--per-head or --block");
    }
}

// --head names heads 0..h-1, --flash-row a query row 0..N-1 (check_pass checks the head
// --ablate-head names).
void check_head_numbers(const Config& c, const Sizes& s) {
    if (c.flash_row && *c.flash_row >= s.seq_len) {
        throw Error("--flash-row " + std::to_string(*c.flash_row) +
                    " is not a query row: the rows are 0.." + std::to_string(s.seq_len - 1));
    }
    for (std::size_t head : c.view_heads) {
        if (head >= s.heads) {
            throw Error("--head " + std::to_string(head) + " is not a head: the heads are 0.." +
                        std::to_string(s.heads - 1));
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
    info.appended_keys = c.add_zero_attn ? 1 : 0;
    info.d_model = s.d_model;
    info.heads = s.heads;
    info.kv_heads = s.kv_heads;
    info.head_dim = s.head_dim;
    info.kdim = s.kdim;
    info.vdim = s.vdim;
    info.causal = c.causal;
    info.values = c.values;
    info.explain = c.explain;
    return info;
}

RunInfo describe(const Config& c, const Sizes& s, const Problem& p) {
    RunInfo info = describe_sizes(c, s);
    info.self_attention = p.inputs.self_attention();
    info.bias = p.weights.any_bias();
    info.threads = p.options.threads;
    info.kernels = kernel_variant_name();
    info.parameters = p.weights.parameter_count();
    info.appended_keys = appended_kv(p.weights, p.options).count();
    info.weights_source = c.demo_heads             ? "demo heads (constructed)"
                          : c.weights_path.empty() ? seeded(c.seed)
                                                   : sanitized(c.weights_path);
    if (c.text) info.tokens = tokenize(*c.text);
    if (c.demo_heads) info.head_names = demo_head_names();
    info.inputs_source = c.text                 ? "--text, " + std::to_string(s.seq_len) + " tokens"
                         : c.input_path.empty() ? seeded(c.seed)
                         : c.key_path.empty()
                             ? sanitized(c.input_path)
                             : sanitized(c.input_path + ", " + c.key_path + ", " + c.value_path);
    return info;
}

// --block's feed-forward width: the state dict's, else --d-ff, else 4·d_model.
std::size_t block_width(const Config& c, const Sizes& s, const Sources& files) {
    if (files.block)
        return reconcile(c.d_ff, "--d-ff", files.block->d_ff(), c.weights_path, "d_ff");
    return c.d_ff.value_or(4 * s.d_model);
}

// The heads' rules before any weight is made: the heads split d_model (unless --head-dim
// gives their width), the key/value heads the heads.
void check_heads(const Config& c, const Sizes& s) {
    check_head_width(s.d_model, c.head_dim ? s.inner() : s.d_model, s.heads);
    check_kv_heads(s.heads, s.kv_heads);
}

// Whether --backward's gradients may pass float32 (run_backward refuses them): a generous
// bound, |dO|·max(1, |x|)²·(dO's elements)·M past 1e30. Ordinary runs stay far below it; past
// it the run is computed once quietly first, so that the refusal comes before any output.
bool gradients_may_overflow(const PassProblem& p) {
    if (p.grad_output.empty()) return false;
    const double x = std::max({1.0, largest_value(p.inputs.x_q), largest_value(p.inputs.x_k),
                               largest_value(p.inputs.x_v)});
    const double keys = double(p.inputs.x_k.empty() ? p.inputs.x_q.size(1) : p.inputs.x_k.size(1));
    return largest_value(p.grad_output) * x * x * double(p.grad_output.numel()) * keys > 1e30;
}

// Whether the pass may stop on overflow (core/forms/score_bound.h). The pre-LN block attends over
// norm1's output, bounded whatever its input; a block's feed-forward and residual stream
// are bounded too.
bool may_stop_on_overflow(const Config& c, const Problem& p) {
    const double input = largest_value(p.inputs.x_q);
    if (c.block) {
        const bool pre = c.block == BlockKind::Pre;
        const double attended =
            pre ? layer_norm_bound(p.block->norm1_weight, p.block->norm1_bias) : input;
        return may_overflow(p.weights, attended, attended, p.options) ||
               may_overflow(*p.block, p.weights, input, pre);
    }
    return may_overflow(p.weights, input, largest_value(p.inputs.x_k), p.options);
}

// The pass's options from the configuration, h heads on `path` with `threads` workers.
ForwardOptions options_of(const Config& c, std::size_t heads, AttentionPath path,
                          std::size_t threads) {
    ForwardOptions options;
    options.heads = heads;
    options.threads = threads;
    options.zero_masked_rows = c.zero_masked_rows;
    options.scale = !c.no_scale;
    options.scale_base = c.scores.scale_base.value_or(0.0);
    options.add_zero_attn = c.add_zero_attn;
    options.flash_row = c.flash_row;
    options.path = path;
    options.rope = c.form == Form::Mla ? mla_rope(c) : rope_of(c);
    return options;
}

// Whether sizes alone allow x to play query, key and value: M = N, kdim = vdim = d_model.
bool self_attention_sizes(const Sizes& s) {
    return s.kv_len == s.seq_len && s.kdim == s.d_model && s.vdim == s.d_model;
}

}  // namespace

PassProblem dry_problem(const Config& c, const Sizes& s, AttentionPath path, std::size_t d_ff,
                        const std::optional<MlaSizes>& m) {
    PassProblem p;
    p.weights = dry_weights(s, c.bias, c.qk_norm);
    if (c.gate) {  // (h, d_model) head-wise, (h·d_k, d_model) element-wise
        const std::size_t rows = *c.gate ? s.heads : s.inner();
        p.weights.w_g = Tensor::shape_only({rows, s.d_model});
        if (c.bias) p.weights.b_g = Tensor::shape_only({rows});
    }
    if (c.block) p.block = dry_block(s.d_model, d_ff);
    if (m) p.mla = dry_mla_weights(*m);
    p.inputs = dry_inputs(s, self_attention_sizes(s));
    p.masks = masks_of(c);
    if (c.backward) p.grad_output = Tensor::shape_only({s.batch, s.seq_len, s.d_model});
    p.options = options_of(c, m ? m->heads : s.heads, path, 1);
    return p;
}

namespace {

// What the forward of `p` keeps for a backward, read off a dry run of it.
std::vector<KeptTensor> dry_kept(const Config& c, PassProblem p) {
    Workspace workspace = Workspace::dry();
    Kept kept;
    p.options.workspace = &workspace;  // without_values keeps the options
    p.options.keep = &kept;
    p = without_values(p);
    NullTracer quiet;
    const ForwardResult result = run_pass(c, p, quiet);
    return kept_tensors(p.inputs, kept, result.weights);
}

// --backward of one attention layer (not MLA's, nor the block's): how the multiply-adds split
// between the forward and the backward, what the forward keeps for the backward and, on the
// standard path under --shapes-only, what the streaming path would keep.
void describe_backward(RunInfo& info, const Config& c, const PassProblem& p) {
    if (c.form == Form::Mla || c.block) return;
    info.backward = true;
    info.macs = dry_tally(c, p).macs;
    info.kept = dry_kept(c, p);
    if (info.shapes_only && p.options.path == AttentionPath::Standard &&
        normaliser_of(p.masks).streams) {
        PassProblem streaming = p;
        streaming.options.path = AttentionPath::Streaming;
        info.kept_streaming = dry_kept(c, streaming);
    }
}

// How GPT-2's Conv1D weights were read, and its mask when the run has none.
std::string conv1d_note(bool causal) {
    return std::string(
               "weights: GPT-2's Conv1D stores (in, out) and computes x @ W + b, so "
               "in_proj_weight = c_attn.weight.T (3·d_model, d_model), split into W_q, "
               "W_k, W_v, and W_o = c_proj.weight.T") +
           (causal ? "" : "; GPT-2's attention is causal: add --causal to mask as it does");
}

// The run's multiply-adds: the pass as a dry run counts them (pass_macs, with the block's),
// the second pass of --ablate-head and of --head-contributions.
std::uint64_t run_macs(const Config& c, std::uint64_t pass_macs) {
    return pass_macs * (1 + (c.ablate_head ? 1 : 0) + (c.head_contributions ? 1 : 0));
}

// --form mla with seeded weights: d_h = d_v = d_k, d_c = --latent-dim or 4·d_k, d_R =
// --rope-dim or d_k/2 rounded down to even (at least 2).
MlaSizes seeded_mla(const Config& c, const Sizes& s) {
    check_heads(c, s);
    const std::size_t d_k = s.d_model / s.heads;
    const MlaSizes m = seeded_mla_sizes(s.d_model, s.heads, c.latent_dim.value_or(4 * d_k),
                                        c.rope_dim.value_or(std::max<std::size_t>(2, d_k / 4 * 2)));
    if (m.d_rope % 2 != 0) {
        throw Error("--rope-dim must be even: RoPE turns pairs of features, got " +
                    std::to_string(m.d_rope));
    }
    return m;
}

// h of an MLA state dict: --heads, or its num_heads entry.
std::size_t mla_heads(const Config& c, const LoadedMla& loaded) {
    if (loaded.num_heads) {
        return reconcile(c.heads, "--heads", *loaded.num_heads, c.weights_path, "num_heads");
    }
    if (c.heads) return *c.heads;
    throw Error(c.weights_path +
                ": give --heads (the model's num_attention_heads): a state dict "
                "does not record how q_proj's rows split into heads; or save num_heads=H in the "
                ".npz");
}

// MLA's header: the width of each head's q and k, what q·k sums over and the scale divides by,
// [nope (d_h), RoPE (d_R)] (its values are d_v wide); its parameters, no biases; its variant.
void describe_mla(RunInfo& info, const Config& c, const MlaSizes& m) {
    info.head_dim = m.d_nope + m.d_rope;
    info.mla = m;
    info.bias = false;
    info.parameters = mla_parameter_count(m);
    info.variant = "multi-head latent attention (DeepSeek-V2), d_c=" + std::to_string(m.d_latent) +
                   " d_R=" + std::to_string(m.d_rope) + " d_h=" + std::to_string(m.d_nope) +
                   " d_v=" + std::to_string(m.d_v) + " (q and k: d_k = d_h + d_R), " +
                   (c.mla_decode ? "decoded token by token with a cache of c_kv and k_pe" +
                                       std::string(c.kv_block_size ? " in blocks" : "")
                                 : "naive and absorbed");
}

// --form mla: its weights (a state dict, or seeded once the budget allows them), the inputs,
// the masks, and the options every form takes.
Problem build_mla_problem(const Config& c) {
    Ledger ledger(c.max_memory);
    const Sources files = load_files(c, ledger);
    Sizes s = resolve_sizes(c, files);
    Problem p;
    MlaSizes m{};
    if (!c.weights_path.empty()) {
        const LoadedMla loaded = load_mla_arrays(c.weights_path, ledger);
        p.mla = mla_weights_from_state_dict(loaded.arrays, c.weights_path, mla_heads(c, loaded));
        p.mla_names = mla_names_of(loaded.arrays);
        m = mla_sizes(*p.mla, mla_heads(c, loaded));
        reconcile(c.latent_dim, "--latent-dim", m.d_latent, c.weights_path, "d_c");
        reconcile(c.rope_dim, "--rope-dim", m.d_rope, c.weights_path, "d_R");
        if (!files.inputs)
            s.d_model = s.kdim = s.vdim =
                reconcile(c.d_model, "--d-model", m.d_model, c.weights_path, "d_model");
        ledger.hold(sizeof(float) * mla_parameter_count(m));
    } else {
        m = seeded_mla(c, s);
    }
    s.heads = s.kv_heads = m.heads;
    const Sizes naive = mla_naive_sizes(m, s.batch, s.seq_len);
    bool mask_looks_keep = false;
    Masks masks = load_masks(c, naive, files.layout, ledger, mask_looks_keep);
    if (c.mla_decode) check_form(Form::Decode, naive, true, masks);  // before any output
    const Tensor grad_output = load_grad_output(c, naive, files.layout, ledger);
    PassProblem dry = dry_problem(c, s, AttentionPath::Standard, 0, m);
    dry.masks = masks;
    const RunPlan plan = plan_run(c, naive, 0, dry, m);
    dry.options.path = plan.path;
    const std::uint64_t pass_macs = dry_tally(c, dry).total_macs();
    const std::uint64_t macs = run_macs(c, pass_macs);
    const double rate = macs_per_thread_second(Form::Mla, plan.path);
    check_time(macs, plan.threads, rate, c.max_time);
    if (!p.mla) p.mla = seeded_mla_weights(m, c.seed);  // drawn once the budget allows them
    p.estimated_seconds = estimated_seconds(macs, plan.threads, rate);
    p.inputs = files.inputs ? *files.inputs : seeded_inputs(s, true, c.seed);
    p.masks = std::move(masks);
    p.mask_looks_keep = mask_looks_keep;
    p.layout = files.layout;
    p.options = options_of(c, m.heads, plan.path, plan.threads);
    check_masks(p.masks, naive);
    check_head_numbers(c, s);
    if (c.backward) p.grad_output = grad_output_of(c, grad_output, naive);
    p.compute_first = may_overflow(*p.mla, m.heads, largest_value(p.inputs.x_q)) ||
                      gradients_may_overflow(p);
    if (p.compute_first) check_time(2 * macs, plan.threads, rate, c.max_time);  // two passes
    p.info = describe(c, s, p);
    p.info.layout_notes = layout_notes(p.layout);
    if (c.backward) p.info.grad_output_source = grad_output_source(c);
    describe_mla(p.info, c, m);
    p.info.total_macs = pass_macs;
    return p;
}

}  // namespace

Problem build_shapes(const Config& c) {
    const Sizes s = resolve_sizes(c, Sources{});
    check_heads(c, s);
    check_kv_quant(c, s);
    check_form(c.form, s, self_attention_sizes(s), masks_of(c));
    const std::size_t d_ff = block_width(c, s, Sources{});
    const std::optional<MlaSizes> mla =
        c.form == Form::Mla ? std::optional<MlaSizes>(seeded_mla(c, s)) : std::nullopt;
    const AttentionPath path = c.attention.value_or(AttentionPath::Standard);
    Problem p;
    static_cast<PassProblem&>(p) = dry_problem(c, s, path, d_ff, mla);
    p.info = describe_sizes(c, s);
    p.info.self_attention = p.inputs.self_attention();
    p.info.bias = c.bias;
    p.info.threads = 1;
    p.info.parameters = p.weights.parameter_count();
    p.info.weights_source = p.info.inputs_source = "none (--shapes-only)";
    if (c.backward) p.info.grad_output_source = p.info.weights_source;
    p.info.shapes_only = true;
    if (c.gate && c.form != Form::Decode) {
        p.info.activation_tensors =
            "Q, K, V, scores, context, concat, gate, gated concat and output";
    }
    if (c.block) {
        p.info.parameters += p.block->parameter_count();
        p.info.activation_tensors = "attention's " + p.info.activation_tensors +
                                    ", the block's norms, sums and feed-forward";
    }
    if (c.backward) p.info.activation_tensors += " with the backward's gradients";
    p.info.variant = variant_description(c, d_ff);
    p.info.fused_qkv = c.form == Form::FusedQkv;
    if (mla) describe_mla(p.info, c, *mla);
    const Sizes pass_sizes = mla ? mla_naive_sizes(*mla, s.batch, s.seq_len) : s;
    p.info.activation_bytes = pass_bytes(c, pass_sizes, p, path, 1, mla);
    p.info.total_macs = dry_tally(c, p).total_macs();
    p.info.kv_ledger = kv_ledger_of(c, s, mla);
    if (c.backward) describe_backward(p.info, c, p);
    return p;
}

Problem build_problem(const Config& c) {
    if (c.form == Form::Mla) return build_mla_problem(c);
    Ledger ledger(c.max_memory);
    Sources files = load_files(c, ledger);
    const Sizes s = resolve_sizes(c, files);
    check_heads(c, s);
    check_kv_quant(c, s);
    const std::size_t d_ff = block_width(c, s, files);
    bool mask_looks_keep = false;
    Masks masks = load_masks(c, s, files.layout, ledger, mask_looks_keep);
    const Tensor grad_output = load_grad_output(c, s, files.layout, ledger);
    const bool self = files.inputs
                          ? files.inputs->self_attention()
                          : self_attention_sizes(s);
    check_form(c.form, s, self, masks);
    PassProblem dry = dry_problem(c, s, AttentionPath::Standard, d_ff);
    dry.masks = masks;
    const RunPlan plan = plan_run(c, s, d_ff, dry);
    dry.options.path = plan.path;
    const std::uint64_t pass_macs = dry_tally(c, dry).total_macs();
    const std::uint64_t macs = run_macs(c, pass_macs);
    const double rate = macs_per_thread_second(c.form, plan.path);
    check_time(macs, plan.threads, rate, c.max_time);

    Problem p;
    if (c.block) p.block = files.block ? *files.block : seeded_block(s.d_model, d_ff, c.seed);
    p.weights = c.demo_heads    ? demo_weights(s.d_model, s.heads, s.seq_len)
                : files.weights ? *files.weights
                                : seeded_weights(s.d_model, s.inner(), s.kv_heads * s.d_k(), c.bias,
                                                 c.random_bias, c.seed);
    p.inputs = files.inputs ? *files.inputs : seeded_inputs(s, self, c.seed);
    p.masks = std::move(masks);
    set_qk_norm(c, s, files.weights.has_value() && !c.demo_heads, p.weights);
    set_gate(c, s, files.weights.has_value() && !c.demo_heads, p.weights);
    if (c.backward || c.gradcheck) {
        p.grad_output = grad_output_of(c, grad_output, s);
        p.weight_names = files.weights ? files.names
                         : c.block     ? own_block_attention_names(p.weights)
                                       : own_names(p.weights);
        p.block_naming = files.block_naming;
    }
    p.layout = files.layout;
    p.mask_looks_keep = mask_looks_keep;
    check_shapes(p.weights, p.inputs, p.masks, s.heads);

    p.options = options_of(c, s.heads, plan.path, plan.threads);
    check_bias_kv(c, p.weights);
    check_head_numbers(c, s);
    ForwardOptions ablated = p.options;  // the second pass of --ablate-head, checked up front
    ablated.ablate_head = c.ablate_head;
    check_pass(p.weights, p.inputs, p.masks, ablated);
    p.info = describe(c, s, p);
    p.info.layout_notes = layout_notes(p.layout);
    if (c.backward) p.info.grad_output_source = grad_output_source(c);
    if (files.conv1d) p.info.layout_notes.push_back(conv1d_note(c.causal));
    if (p.block) p.info.parameters += p.block->parameter_count();
    p.info.variant = variant_description(c, d_ff);
    p.info.fused_qkv = c.form == Form::FusedQkv;
    p.info.total_macs = pass_macs;
    if (c.backward) describe_backward(p.info, c, p);  // the pass that runs: its biases, ...
    p.estimated_seconds = estimated_seconds(macs, plan.threads, rate);
    p.compute_first = may_stop_on_overflow(c, p) || gradients_may_overflow(p);
    if (p.compute_first) check_time(2 * macs, plan.threads, rate, c.max_time);  // two passes
    return p;
}

}  // namespace mha
