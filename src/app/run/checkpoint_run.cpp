// The checkpoint run: open, check the tokens and the budget, forward a layer at a time,
// report, predictions, views, save.

#include "app/run/checkpoint_run.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <set>
#include <sstream>

#include "app/cli/terminal.h"
#include "app/run/after_run.h"
#include "app/run/checkpoint_sources.h"
#include "app/run/kv_ledger.h"
#include "app/run/lesson_page.h"
#include "app/run/model_run.h"
#include "core/backward/training_costs.h"
#include "core/checked.h"
#include "core/error.h"
#include "core/forms/block.h"
#include "core/forms/model.h"
#include "core/forms/speculate.h"
#include "core/kernels/kernels.h"
#include "core/pass/costs.h"
#include "io/atomic_file.h"
#include "io/checkpoint/load.h"
#include "io/model_file.h"
#include "io/npy.h"
#include "io/printable.h"
#include "show/acceptance.h"
#include "show/format.h"
#include "show/head_roles.h"
#include "show/head_summary.h"
#include "show/heatmap.h"
#include "show/model_view.h"
#include "show/score_stats.h"
#include "show/svg.h"
#include "show/tee_tracer.h"
#include "show/text_layout.h"
#include "tokenize/load.h"

namespace mha {

namespace {

namespace ck = checkpoint;

constexpr std::uint64_t head_chunk_bytes = std::uint64_t(16) << 20;  // an LM-head chunk's rows

// Rows of the LM head read at once: about head_chunk_bytes of float32, at least one row.
std::size_t head_chunk(const ck::Config& c) {
    return std::max<std::size_t>(
        1, std::min<std::uint64_t>(c.vocab_size, head_chunk_bytes / (4 * c.hidden_size)));
}

// The prompt: --tokens' ids, or --text through the folder's own tokenizer; the labels of its
// positions (the ids, or the tokenizer's pieces made printable), where it came from and the
// tokenizer that cut it.
struct Prompted {
    std::vector<std::size_t> ids;
    std::vector<std::string> labels;
    std::string source;  // "--tokens" or "--text"
    std::optional<tokenizers::Tokenizer> tokenizer;  // --text's
};

Prompted prompted(const Config& c) {
    Prompted p;
    if (!c.text) {
        p.ids = *c.tokens;
        for (std::size_t t : p.ids) p.labels.push_back(std::to_string(t));
        p.source = "--tokens";
        return p;
    }
    Ledger ledger(c.max_memory);
    p.tokenizer = tokenizers::load_tokenizer(c.checkpoint_path, ledger);
    for (const tokenizers::TokenPiece& t : p.tokenizer->encode(*c.text, !c.no_special, nullptr, "--text")) {
        p.ids.push_back(t.id);
        p.labels.push_back(sanitized(t.piece));
    }
    p.source = "--text";
    return p;
}

// Token ids below vocab_size, no more than max_position_embeddings of them; `what` names
// where they came from ("--tokens", "--text").
void check_tokens(const ck::Config& c, const std::vector<std::size_t>& tokens,
                  const std::string& what = "--tokens") {
    if (tokens.empty()) throw Error(what + " gives no token; the model needs at least one");
    if (tokens.size() > c.max_positions) {
        throw Error(what + " gives " + std::to_string(tokens.size()) + " tokens, more than " +
                    c.file + " allows (" +
                    (c.family == ck::Family::Gpt2 ? "n_positions " : "max_position_embeddings ") +
                    std::to_string(c.max_positions) + ")");
    }
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        if (tokens[i] >= c.vocab_size) {
            throw Error(what + ": token " + std::to_string(tokens[i]) + " at position " +
                        std::to_string(i) + " is not below vocab_size " +
                        std::to_string(c.vocab_size) + " (" + c.file + ")");
        }
    }
}

std::size_t checked_layer(const Config& c, const ck::Config& config) {
    const std::size_t layer = c.layer.value_or(0);
    if (layer >= config.layers) {
        throw Error("--layer " + std::to_string(layer) + " is out of range: " + config.file +
                    " has " + std::to_string(config.layers) + " layers, 0.." +
                    std::to_string(config.layers - 1));
    }
    for (std::size_t head : c.view_heads) {
        if (head >= config.heads) {
            throw Error("--head " + std::to_string(head) + " is not a head: layer " +
                        std::to_string(layer) + "'s heads are 0.." +
                        std::to_string(config.heads - 1));
        }
    }
    return layer;
}

Sizes layer_sizes(const ck::Config& c, std::size_t n) {
    const std::size_t e = c.hidden_size;
    return {1, n, n, e, e, e, c.heads, c.kv_heads, c.head_dim};
}

// Whether the run shows (or saves) more layers' attention weights than the traced one: the
// summary's head roles, the lesson page and --save read every layer's, and the heatmap and the
// SVG every layer's unless --layer picks one. Otherwise the others are freed as they end.
bool shows_every_layer(const Config& c) {
    const bool drawn = c.heatmap || !c.svg_path.empty();
    return wants_summary(c) || c.format == Format::Html || !c.save_path.empty() ||
           (drawn && !c.layer);
}

// Bytes one layer's attention and block hold at their peak on n tokens, the most of any layer
// as a dry run of each counts them, and each thread's kernel scratch.
std::uint64_t layer_pass_bytes(const ck::Config& cf, std::size_t n, std::size_t threads) {
    const std::string what = "the checkpoint run's memory";
    std::uint64_t peak = 0;
    NullTracer quiet;
    for (std::size_t l = 0; l < cf.layers; ++l) {
        const ModelLayer layer = ck::dry_layer(cf, l);
        Workspace workspace = Workspace::dry_blocks();  // as the forward's blocks are taken
        const Tensor x = Tensor::shape_only({1, n, cf.hidden_size});
        forward_block(layer.attention, layer.block, BlockKind::Pre, {x, x, x}, layer_masks(layer),
                      layer_options(layer, 1, &workspace), quiet);
        peak = std::max(peak, workspace.peak_bytes());
    }
    const Sizes s = layer_sizes(cf, n);
    return checked_sum(
        {peak, checked_product({threads, scratch_bytes(s, AttentionPath::Standard, false)}, what)},
        what);
}

// The parts of the working set, in bytes, and their words for a refusal.
struct WorkingSet {
    std::uint64_t layer = 0, prompt = 0, pass = 0, kept = 0, head = 0;
    std::uint64_t total() const {
        return checked_sum({layer, prompt, pass, kept, head}, "the checkpoint run's memory");
    }
};

// The drafted tokens of --draft K --draft-layers L (0 without a draft).
std::size_t drafted(const Config& c) { return c.draft_layers ? *c.draft : 0; }

// What the run holds at its peak: the largest layer's weights in float32, the gathered
// embedding rows (and GPT-2's position rows) with the final norm, one layer's pass and block,
// what is kept for the views (the traced layer's weights, or every layer's when the run shows
// them; the residual streams and the saved copies with --save; the maps the lesson page copies)
// and an LM-head chunk with its logits. A draft of K tokens reads the prompt and the draft, N +
// K tokens, while the run's own prompt is still held: its pass, head chunk and embeddings are
// those of N + K tokens, and it keeps its first layer's weights and its logits.
WorkingSet working_set(const Config& c, const ck::Checkpoint& ck, std::size_t n,
                       std::size_t distinct) {
    const ck::Config& cf = ck.config;
    const std::string what = "the checkpoint run's memory";
    WorkingSet w;
    for (std::size_t l = 0; l < cf.layers; ++l) w.layer = std::max(w.layer, ck::layer_bytes(ck, l));
    const std::uint64_t row = checked_product({cf.hidden_size, sizeof(float)}, what);
    const std::size_t K = drafted(c), longest = n + K;
    w.prompt = checked_product({row, distinct + (cf.rope ? 0 : n) + 2}, what);
    if (K) {
        w.prompt = checked_sum(
            {w.prompt, checked_product({row, distinct + K + (cf.rope ? 0 : longest) + 2}, what)},
            what);
    }
    w.pass = layer_pass_bytes(cf, longest, model_run_threads(c));
    const std::uint64_t logits = checked_product({n, cf.vocab_size, sizeof(float)}, what);
    const bool save = !c.save_path.empty();
    const std::uint64_t page_maps =
        c.format == Format::Html ? drawn_maps(c, cf.heads) * (c.layer ? 1 : cf.layers) : 0;
    w.kept = checked_sum({checked_product({shows_every_layer(c) ? cf.layers : 1u, cf.heads, n, n,
                                           sizeof(float), save ? 4u : 1u},
                                          what),
                          save ? checked_product({cf.layers + 1, n, row, 4}, what) : 0,
                          checked_product({logits, save ? 4u : 1u}, what),
                          checked_product({page_maps, n, n, sizeof(float)}, what)},
                         what);
    if (K) {
        w.kept = checked_sum({w.kept, checked_product({cf.heads, longest, longest, sizeof(float)}, what),
                              checked_product({longest, cf.vocab_size, sizeof(float)}, what)},
                             what);
    }
    const std::uint64_t chunk = head_chunk(cf);
    w.head = checked_product({chunk, row + longest * sizeof(float)}, what);
    return w;
}

// How to give a shorter prompt, in the option it came in.
std::string shorter_prompt(const Config& c) {
    if (!c.text) return "give fewer --tokens";
    return c.text_file.empty() ? "use a shorter --text" : "use a shorter --text-file";
}

// Refuses, before any tensor is read, a run whose working set exceeds --max-memory.
// Returns the working set.
WorkingSet check_budget(const Config& c, const ck::Checkpoint& ck, std::size_t n,
                        std::size_t distinct) {
    const WorkingSet w = working_set(c, ck, n, distinct);
    if (w.total() <= c.max_memory) return w;
    throw Error("the checkpoint run needs " + byte_size(w.total()) + " (a layer's weights " +
                byte_size(w.layer) + " in float32, the embeddings " + byte_size(w.prompt) +
                ", the pass " + byte_size(w.pass) + ", the weights, logits and states kept " +
                byte_size(w.kept) + ", an LM-head chunk " + byte_size(w.head) +
                "), more than --max-memory " + byte_size(c.max_memory) +
                "; raise --max-memory" + (drafted(c) ? ", " : " or ") + shorter_prompt(c) +
                (drafted(c) ? " or a smaller --draft" : ""));
}

// Layer l's parameters, as the config sizes them.
std::uint64_t layer_parameters(const ck::Config& cf, std::size_t l) {
    const ModelLayer layer = ck::dry_layer(cf, l);
    return layer.attention.parameter_count() + layer.block.parameter_count();
}

// The whole model's parameters: embeddings (and an untied head), every layer, the final norm.
std::uint64_t parameter_total(const ck::Config& cf) {
    const std::string what = "the checkpoint's parameters";
    std::uint64_t total = checked_product({cf.vocab_size, cf.hidden_size, cf.tied ? 1u : 2u}, what);
    if (!cf.rope) total += std::uint64_t(cf.max_positions) * cf.hidden_size;
    total += std::uint64_t(cf.hidden_size) * (cf.rope ? 1 : 2);
    for (std::size_t l = 0; l < cf.layers; ++l)
        total = checked_sum({total, layer_parameters(cf, l)}, what);
    return total;
}

// "15496 Hello, 995 Ġworld": each id with its piece, the first 32 of them.
std::string token_list(const Prompted& in) {
    constexpr std::size_t shown = 32;
    std::string text;
    for (std::size_t i = 0; i < in.ids.size() && i < shown; ++i)
        text += (i ? ", " : "") + std::to_string(in.ids[i]) + " " + in.labels[i];
    if (in.ids.size() > shown) text += ", ... (" + std::to_string(in.ids.size() - shown) + " more)";
    return text;
}

// The steps the run shows (--step counts them), as a dry run of the model does.
std::size_t dry_steps(const ck::Config& cf, std::size_t n, std::size_t layer) {
    const ck::Prompt dry = ck::dry_prompt(cf, n);
    Tally tally;
    forward_model(dry.model, ck::dry_source(cf), dry.rows, layer, 1, tally);
    return tally.steps;
}

RunInfo checkpoint_info(const Config& c, const ck::Config& cf, const std::string& source,
                        std::size_t n, std::size_t layer) {
    RunInfo info;
    info.batch = 1;
    info.seq_len = info.kv_len = n;
    info.d_model = info.kdim = info.vdim = cf.hidden_size;
    info.heads = cf.heads;
    info.parameters = parameter_total(cf);
    info.kv_heads = cf.kv_heads;
    info.head_dim = cf.head_dim;
    info.bias = cf.qkv_bias;
    info.causal = true;
    info.threads = model_run_threads(c);
    info.kernels = kernel_variant_name();
    info.weights_source = source + " (" + cf.model_type + ")";
    info.inputs_source = "--tokens, " + counted(n, "token");
    info.values = c.values;
    info.explain = c.explain;
    if (c.tokens) {
        for (std::size_t t : *c.tokens) info.tokens.push_back(std::to_string(t));
    }
    info.variant = "layer " + std::to_string(layer) + " of " + std::to_string(cf.layers) + ", " +
                   cf.model_type + " block, d_ff=" + std::to_string(cf.intermediate_size);
    info.config_file = sanitized(cf.file);
    for (const std::string& key : cf.keys) info.config_keys.push_back(sanitized(key));
    return info;
}

// "17 41.2%   42 20.1% ...": the next token ids and their probabilities.
void print_next_tokens(std::ostream& out, const Tensor& logits) {
    std::vector<std::string> pieces;
    for (const Prediction& p : top_predictions(logits, predictions_shown))
        pieces.push_back(std::to_string(p.token) + " " + fixed(100.0 * p.probability, 1) + "%");
    out << "\n";
    write_filled(out, pieces, "   ", "next token: ", "            ");
}

// "attention weights of layer 1" with --layer, else "every layer's heads" or the chosen ones.
std::string views_title(const Config& c, std::size_t layer) {
    if (c.layer) return "attention weights of layer " + std::to_string(layer);
    if (c.mean_view) return "every layer's mean over heads";
    return c.view_heads.empty() ? "every layer's heads" : "the chosen heads of every layer";
}

// The maps the views draw: the --layer layer's chosen heads, else every layer's.
std::vector<WeightMap> view_maps(const Config& c, const ModelResult& r, std::size_t layer) {
    return c.layer ? layer_maps(r.weights[layer], layer, c.view_heads, c.mean_view)
                   : model_maps(r.weights, c.view_heads, c.mean_view);
}

// Every layer's head roles on the tokens.
std::vector<std::vector<HeadRoles>> every_layer_roles(const ModelResult& r,
                                                      const std::vector<std::string>& labels) {
    std::vector<std::vector<HeadRoles>> roles;
    for (const Tensor& w : r.weights) roles.push_back(head_roles(w, labels));
    return roles;
}

// The lesson page's view of the run: the top-5 next tokens, the maps --heatmap would draw and
// every layer's ranked head roles, worded as the terminal words them.
ModelView page_view(const Config& c, const ck::Config& cf, const ModelResult& r,
                    std::size_t layer, const std::vector<std::string>& labels) {
    ModelView view;
    view.prediction_title = "Next token";
    view.maps_title = "Attention weights";
    view.maps = view_maps(c, r, layer);
    view.labels = position_labels(labels.size(), labels);
    view.caption = {views_title(c, layer) + " (rows: queries, columns: keys)",
                    "model: " + sanitized(cf.file)};
    std::ostringstream prediction;
    print_next_tokens(prediction, r.logits);
    view.prediction = prediction.str();
    view.roles = every_layer_roles(r, labels);
    view.ranked_roles = true;
    return view;
}

// The summary, the heatmaps (last) and the SVG, as --model shows them.
void show_views(std::ostream& out, const Config& c, const ck::Config& cf, const ModelResult& r,
                std::size_t layer, const ScoreStats& stats, const std::vector<std::string>& ids) {
    const std::vector<std::string> rows = position_labels(ids.size(), ids);
    if (wants_summary(c)) {
        ForwardResult shown;
        shown.weights = r.weights[layer];
        stats.print(out, shown, cf.head_dim, true, cf.query_pre_attn_scalar, cf.attn_softcap);
        print_head_summary(out, head_patterns(r.weights[layer]), {});
        print_ranked_head_roles(out, every_layer_roles(r, ids));
    }
    if (c.heatmap) {  // last, so that a terminal keeps the picture on the screen
        HeatmapStyle style = terminal_style(c.color);
        style.auto_scale = c.auto_scale;
        style.cell_width = c.layer ? style.cell_width : 1;
        style.narrow_to_fit = c.layer.has_value();
        out << "\n" << views_title(c, layer) << " (rows: queries, columns: keys)\n";
        draw_heatmaps(out, view_maps(c, r, layer), rows, style);
    }
    if (!c.svg_path.empty()) {
        check_stdout();
        AtomicFile file(c.svg_path);
        SvgStyle style;
        style.caption = {views_title(c, layer), "model: " + sanitized(cf.file)};
        style.auto_scale = c.auto_scale;
        write_svg(file.stream(), view_maps(c, r, layer), rows, rows, style);
        file.commit();
    }
}

// --save: tokens, logits, the --layer layer's weights, every layer's weights and streams.
void save(const Config& c, const ModelResult& r, std::size_t layer) {
    check_stdout();
    std::vector<std::pair<std::string, Tensor>> arrays = result_arrays(r, layer);
    npy::Array tokens{{1, c.tokens->size()}, 'i', 8, {}};
    for (std::size_t t : *c.tokens) tokens.values.push_back(double(t));
    npy::write_npz(c.save_path, arrays, {{"tokens", tokens}});
}

// Bytes layer l's forward keeps for a backward, from a dry run of it: its input and norms, Q, K,
// V (before and after QK-norm), P, the context, the concat, the feed-forward's hidden layers
// (gated: the gate, the up projection and their product) and the sandwich's branches.
std::uint64_t training_bytes(const ck::Config& cf, std::size_t n, std::size_t l) {
    const ModelLayer layer = ck::dry_layer(cf, l);
    Workspace workspace = Workspace::dry();
    const Tensor x = Tensor::shape_only({1, n, cf.hidden_size});
    BlockKept k;
    NullTracer quiet;
    PassTrace trace(quiet);
    const ForwardResult r =
        forward_block(layer.attention, layer.block, BlockKind::Pre, {x, x, x}, layer_masks(layer),
                      layer_options(layer, 1, &workspace), trace, &k);
    const std::string what = "the memory training keeps";
    std::uint64_t bytes =
        kept_bytes(kept_tensors({k.attn_in, k.attn_in, k.attn_in}, k.attention, r.weights));
    for (const Tensor* t : {&k.norm1_in, &k.ffn_in, &k.norm2_in, &k.hidden, &k.activated, &k.up,
                            &k.post_attn_in, &k.post_ffn_in})
        bytes = checked_sum({bytes, checked_product({t->numel(), sizeof(float)}, what)}, what);
    return bytes;
}

// --backward: what training keeps, every layer's forward at once, and the largest layer's.
void print_training(std::ostream& out, const ck::Config& cf, std::size_t n) {
    std::uint64_t total = 0, largest = 0;
    for (std::size_t l = 0; l < cf.layers; ++l) {
        const std::uint64_t bytes = training_bytes(cf, n, l);
        total = checked_sum({total, bytes}, "the memory training keeps");
        largest = std::max(largest, bytes);
    }
    out << "\ntraining at N = " << n << " keeps " << byte_size(total)
        << " of activations for the backward (every layer's forward until its backward runs; "
        << byte_size(largest) << " for the largest layer: its input and norms, Q, K, V, P, the "
        << "context, the concat and the feed-forward's hidden layers)\n";
}

// Each layer's parameters and KV cache per token, and the whole model's parameters.
void print_layer_sizes(std::ostream& out, const ck::Config& cf) {
    out << "\nlayer  parameters  KV cache per token  attention\n";
    for (std::size_t l = 0; l < cf.layers; ++l) {
        const std::uint64_t params = layer_parameters(cf, l);
        const std::uint64_t cache = 2 * std::uint64_t(cf.kv_heads) * cf.head_dim * sizeof(float);
        const std::size_t window = cf.layer[l].window;
        out << padded_left(std::to_string(l), 5) << "  " << padded_left(std::to_string(params), 10)
            << "  " << padded_left(byte_size(cache), 18) << "  "
            << (window ? "local, window " + std::to_string(window) + " (the cache keeps " +
                             std::to_string(window) + " tokens)"
                       : std::string("global"))
            << "\n";
    }
    const std::uint64_t total = parameter_total(cf);
    out << "the whole model: " << total << " parameters, "
        << byte_size(checked_product({total, sizeof(float)}, "the checkpoint's bytes"))
        << " in float32\n\nread from " << sanitized(cf.file) << ":\n";
    for (const std::string& key : cf.keys) out << "  " << sanitized(key) << "\n";
}

// The acceptance's words for a checkpoint's tokens: each id, with its piece when --text loaded
// the folder's tokenizer and it has the id.
TokenWords token_words(const std::optional<tokenizers::Tokenizer>& tokenizer) {
    const tokenizers::Tokenizer* cut = tokenizer ? &*tokenizer : nullptr;
    return {[cut](std::size_t id) {
                const std::string* piece = cut ? cut->piece(std::uint32_t(id)) : nullptr;
                return std::to_string(id) + (piece ? " " + sanitized(*piece) : "");
            },
            ",", "token", "prompt"};
}

}  // namespace

void run_checkpoint_shapes(const Config& c, const ReportFor& report_for, std::ostream& out) {
    const std::string path =
        c.config_path.empty() ? c.checkpoint_path + "/config.json" : c.config_path;
    const ck::Config cf = ck::read_config(path, Ledger(c.max_memory));
    const std::size_t n = c.tokens ? c.tokens->size() : 1;
    if (c.tokens) check_tokens(cf, *c.tokens);
    const std::size_t layer = checked_layer(c, cf);
    const ck::Prompt dry = ck::dry_prompt(cf, n);
    RunInfo info = checkpoint_info(c, cf, sanitized(path) + " (its sizes)", n, layer);
    info.kernels.clear();
    info.shapes_only = true;
    info.inputs_source = c.tokens ? info.inputs_source : "1 token (give --tokens for more)";
    info.activation_bytes = layer_pass_bytes(cf, n, 1);
    info.activation_tensors = "one layer's attention and block at a time";
    Tally tally;
    forward_model(dry.model, ck::dry_source(cf), dry.rows, layer, 1, tally);
    info.total_macs = tally.total_macs();
    if (c.decode) {
        LedgerModel model = config_ledger_model(cf);
        model.name = sanitized(path);
        info.kv_ledger = kv_ledger(model, ledger_settings(c, *c.decode));
    }
    if (c.format == Format::Html) check_lesson_page(c, info, tally.steps);
    const std::unique_ptr<Report> report = report_for(c.step ? tally.steps : 0);
    report->begin(info);
    SourcedTracer tracer(*report, checkpoint_sources(cf, layer));
    const auto start = std::chrono::steady_clock::now();
    forward_model(dry.model, ck::dry_source(cf), dry.rows, layer, 1, tracer);
    const std::chrono::duration<double, std::milli> elapsed =
        std::chrono::steady_clock::now() - start;
    report->finish(ForwardResult{}, elapsed.count());
    if (c.format == Format::Text) {
        print_layer_sizes(out, cf);
        if (c.backward) print_training(out, cf, n);
    }
}

void run_checkpoint(const Config& given, const ReportFor& report_for, std::ostream& out) {
    const Prompted in = prompted(given);
    Config c = given;  // the prompt's ids, whichever option gave them
    c.tokens = in.ids;
    const ck::Checkpoint ck = ck::open_checkpoint(c.checkpoint_path, Ledger(c.max_memory));
    const std::vector<std::size_t>& tokens = in.ids;
    check_tokens(ck.config, tokens, in.source);
    if (c.draft_layers) {
        check_acceptance(ck.config.layers, ck.config.max_positions, tokens.size(),
                         *c.draft_layers, *c.draft);
    }
    const std::size_t layer = checked_layer(c, ck.config);
    const std::size_t distinct = std::set<std::size_t>(tokens.begin(), tokens.end()).size();
    const WorkingSet w = check_budget(c, ck, tokens.size(), distinct);
    if (!c.save_path.empty()) check_writable(c.save_path);
    if (!c.svg_path.empty()) check_writable(c.svg_path);
    RunInfo info = checkpoint_info(c, ck.config, sanitized(ck.folder.dir()), tokens.size(), layer);
    if (given.text) {  // the header names each token: its id and its piece
        info.tokens = in.labels;
        info.inputs_source = "--text, " + counted(tokens.size(), "token") +
                             " by the folder's tokenizer: " + token_list(in);
    }
    const bool page = c.format == Format::Html;
    const std::size_t steps = c.step || page ? dry_steps(ck.config, tokens.size(), layer) : 0;
    if (page) check_lesson_page(c, info, steps, c.layer ? 1 : ck.config.layers);
    Ledger ledger(c.max_memory);   // the reads' bound: what the pass and the views leave of the
    ledger.hold(w.pass + w.kept);  // budget, a layer or a head chunk at a time

    const ck::Prompt prompt = ck::read_prompt(ck, tokens, ledger);
    const ModelSource source = ck::checkpoint_source(ck, head_chunk(ck.config), ledger);
    const std::unique_ptr<Report> report = report_for(steps);
    report->begin(info);
    ScoreStats stats(wants_summary(c));
    TeeTracer tee(*report, stats);
    SourcedTracer tracer(tee, checkpoint_sources(ck.config, layer));
    const auto start = std::chrono::steady_clock::now();
    ModelPass pass;
    pass.keep_hidden = !c.save_path.empty();
    pass.every_layer_weights = shows_every_layer(c);
    const ModelResult r =
        forward_model(prompt.model, source, prompt.rows, layer, model_run_threads(c), tracer, pass);
    const std::chrono::duration<double, std::milli> elapsed =
        std::chrono::steady_clock::now() - start;
    ForwardResult shown;
    shown.output = r.output;
    shown.weights = r.weights[layer];
    if (page) report->model_view(page_view(c, ck.config, r, layer, in.labels));
    report->finish(shown, elapsed.count());
    if (c.format == Format::Text) print_next_tokens(out, r.logits);
    if (c.draft_layers) {  // within the ledger as the run left it, its prompt still held
        const EarlyExits exits =
            ck::early_exits(ck, head_chunk(ck.config), ledger, model_run_threads(c));
        print_acceptance(out, greedy_acceptance(exits, tokens, *c.draft_layers, *c.draft),
                         *c.draft_layers, ck.config.layers, token_words(in.tokenizer));
    }
    show_views(out, c, ck.config, r, layer, stats, in.labels);
    if (!c.save_path.empty()) save(c, r, layer);
}

}  // namespace mha
