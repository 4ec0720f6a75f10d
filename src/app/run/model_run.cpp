// The model run: load, encode, forward (one layer traced), report, views, save.

#include "app/run/model_run.h"

#include <algorithm>
#include <chrono>
#include <sstream>

#include "app/cli/terminal.h"
#include "app/run/after_run.h"
#include "app/run/lesson_page.h"
#include "app/run/time_guard.h"
#include "core/backward/model_backward.h"
#include "core/backward/training_costs.h"
#include "core/checked.h"
#include "core/error.h"
#include "core/forms/block.h"
#include "core/forms/model.h"
#include "core/forms/score_bound.h"
#include "core/forms/speculate.h"
#include "core/kernels/kernels.h"
#include "core/ops/block_ops.h"
#include "core/pass/costs.h"
#include "core/tensor/workspace.h"
#include "io/atomic_file.h"
#include "io/dry.h"
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

namespace mha {

namespace {

// The model, the text and the traced layer (load_run checks them and warns about unknown
// characters).
struct ModelRun {
    Model model;
    ModelText text;  // --backward: without its last character, which only a target is
    std::size_t layer;
    std::vector<std::size_t> targets;  // --backward: each next character's token
};

void check_choices(const Config& c, const Model& model, std::size_t layer) {
    if (layer >= model.layers.size()) {
        throw Error("--layer " + std::to_string(layer) + " is out of range: " + c.model_path +
                    " has " + counted(model.layers.size(), "layer") + ", 0.." +
                    std::to_string(model.layers.size() - 1));
    }
    const std::size_t heads = model.layers[layer].heads;
    for (std::size_t head : c.view_heads) {
        if (head >= heads) {
            throw Error("--head " + std::to_string(head) + " is not a head: layer " +
                        std::to_string(layer) + "'s heads are 0.." + std::to_string(heads - 1));
        }
    }
}

// The run's multiply-adds: each layer's causal attention pass with its block, as a dry run of
// the layer counts them, then the head (N·V·d_model).
std::uint64_t model_macs(const Model& model, std::size_t n) {
    const std::string what = "the model's multiply-adds";
    std::uint64_t macs = checked_product({n, model.vocab_size(), model.d_model()}, what);
    Workspace workspace = Workspace::dry();
    for (const ModelLayer& layer : model.layers) {
        const Tensor x = Tensor::shape_only({1, n, model.d_model()});
        Tally tally;
        forward_block(without_values(layer.attention), without_values(layer.block), BlockKind::Pre,
                      {x, x, x}, layer_masks(layer), layer_options(layer, 1, &workspace), tally);
        macs = checked_sum({macs, tally.total_macs()}, what);
    }
    return macs;
}

// Bytes the model's pass holds at its peak, as a dry run of it counts them: the embedding,
// each layer's attention and block, every layer's (1, h, N, N) weights (the views read them
// after the pass), the final norm, the logits, the streams --save keeps, and with --backward
// what each layer's forward keeps for its backward and every gradient; and each thread's
// kernel scratch for the widest layer.
std::uint64_t model_pass_bytes(const Config& c, const ModelRun& run, std::size_t threads) {
    const std::string what = "the memory for the model";
    const Model dry = without_values(run.model);
    const std::uint64_t tensors =
        c.backward ? forward_backward_peak_bytes(dry, run.text.tokens, run.targets, 1)
                   : forward_peak_bytes(dry, run.text.tokens, !c.save_path.empty());
    const std::size_t n = run.text.tokens.size(), e = run.model.d_model();
    std::uint64_t scratch = 0;
    for (const ModelLayer& l : run.model.layers) {
        const Sizes s{1, n, n, e, e, e, l.heads, l.heads, e / l.heads};
        scratch = std::max(scratch, scratch_bytes(s, AttentionPath::Standard, c.backward));
    }
    return checked_sum({tensors, checked_product({threads, scratch}, what)}, what);
}

// The maps the views copy, (N, N) floats each: the chosen heads (and the mean, which also
// sums in double) of the traced layer with --layer, else of every layer; the lesson page
// copies every layer's again.
std::uint64_t view_bytes(const Config& c, const Model& model, std::size_t n, std::size_t layer) {
    const std::string what = "the memory for the model";
    std::uint64_t shown = 0, every = 0;
    for (std::size_t l = 0; l < model.layers.size(); ++l) {
        const std::size_t maps = drawn_maps(c, model.layers[l].heads);
        every += maps;
        if (!c.layer || l == layer) shown += maps;
    }
    const std::uint64_t cells = checked_product({n, n}, what);
    const std::uint64_t page = c.format == Format::Html ? every : 0;
    return checked_sum({checked_product({shown + page, cells, sizeof(float)}, what),
                        c.mean_view ? checked_product({cells, 16}, what) : 0},
                       what);
}

// Bytes a model run holds at its peak: the model's arrays, the vocabulary's lookup, the pass
// (model_pass_bytes), the views' maps and --save's three copies (C order, .npy, the archive)
// of the logits, the traced layer's weights, every layer's weights, the residual streams and
// with --backward every parameter's gradient.
std::uint64_t model_run_bytes(const Config& c, const ModelRun& run) {
    const std::string what = "the memory for the model";
    const Model& model = run.model;
    const std::size_t n = run.text.tokens.size();
    const std::uint64_t lookup = checked_product({model.vocab_size(), 64}, what);
    std::uint64_t every_weight = 0;
    for (const ModelLayer& each : model.layers)
        every_weight = checked_sum({every_weight, checked_product({each.heads, n, n}, what)}, what);
    const std::uint64_t saved =
        c.save_path.empty()
            ? 0
            : checked_product(
                  {3 * sizeof(float),
                   checked_sum(
                       {checked_product({n, model.vocab_size()}, what),
                        checked_product({model.layers[run.layer].heads, n, n}, what), every_weight,
                        checked_product({model.layers.size() + 1, n, model.d_model()}, what),
                        c.backward ? model.parameter_count() : 0},
                       what)},
                  what);
    return checked_sum(
        {checked_product({model.parameter_count(), sizeof(float)}, what), lookup,
         model_pass_bytes(c, run, model_run_threads(c)), view_bytes(c, model, n, run.layer), saved},
        what);
}

// Refuses, before the model runs, a run that would hold more than --max-memory.
void check_model_budget(const Config& c, const ModelRun& run) {
    const std::uint64_t need = model_run_bytes(c, run);
    if (need <= c.max_memory) return;
    const Model& model = run.model;
    const std::size_t n = run.text.tokens.size();
    throw Error("the model run needs " + byte_size(need) + " (" + sanitized(c.model_path) + ": " +
                counted(model.layers.size(), "layer") + ", N=" + std::to_string(n) +
                " V=" + std::to_string(model.vocab_size()) +
                " d_model=" + std::to_string(model.d_model()) + "), more than --max-memory " +
                byte_size(c.max_memory) + "; raise --max-memory or use a shorter --text");
}

RunInfo model_info(const Config& c, const Model& model, const ModelText& text, std::size_t layer,
                   std::size_t threads) {
    RunInfo info;
    info.batch = 1;
    info.seq_len = info.kv_len = text.tokens.size();
    info.d_model = info.kdim = info.vdim = model.d_model();
    info.heads = info.kv_heads = model.layers[layer].heads;
    info.head_dim = info.d_model / info.heads;
    info.causal = true;
    info.threads = threads;
    info.kernels = kernel_variant_name();
    info.parameters = model.parameter_count();
    info.weights_source = sanitized(c.model_path);
    info.inputs_source = "--text, " + counted(text.tokens.size(), "character");
    info.values = c.values;
    info.explain = c.explain;
    info.tokens = text.characters;
    info.variant = "layer " + std::to_string(layer) + " of " + std::to_string(model.layers.size()) +
                   ", pre-LN block, d_ff=" + std::to_string(model.layers[layer].block.d_ff());
    if (c.backward) {  // no dO: the backward starts from the loss
        info.grad_output_source =
            "none; L = the mean cross-entropy of predicting each next character of --text";
    }
    return info;
}

// The maps' row and column labels: each position and its character.
std::vector<std::string> model_labels(const ModelText& text) {
    std::vector<std::string> visible = text.characters;
    for (std::string& character : visible) {
        // a visible space in the labels; a control or bidi character as U+FFFD
        character = character == " " ? "␣" : sanitized(character);
    }
    return position_labels(text.tokens.size(), visible);
}

// "every layer's heads", or the heads --head chose in each layer.
std::string every_layer_title(const Config& c) {
    if (c.mean_view) return "every layer's mean over heads";
    if (c.view_heads.empty()) return "every layer's heads";
    return "head" + std::string(c.view_heads.size() == 1 ? " " : "s ") +
           joined(c.view_heads, ", ") + " of every layer";
}

// A picture's caption: its title, the text and the model.
std::vector<std::string> model_caption(const Config& c, const std::string& title) {
    return {title, "text: " + sanitized(*c.text), "model: " + sanitized(c.model_path)};
}

std::vector<std::string> model_svg_caption(const Config& c, std::size_t layer) {
    return model_caption(c, c.layer ? "attention weights of layer " + std::to_string(layer)
                                    : every_layer_title(c) + " (rows: queries, columns: keys)");
}

// --export-svg draws one layer's chosen heads with --layer, else the chosen heads (all by
// default) of every layer.
void check_model_svg_size(const Config& c, const Model& model, const ModelText& text,
                          std::size_t layer) {
    std::size_t maps = 0;
    if (c.layer) {
        maps = drawn_maps(c, model.layers[layer].heads);
    } else {
        for (const ModelLayer& each : model.layers) maps += drawn_maps(c, each.heads);
    }
    const std::vector<std::string> labels = model_labels(text);
    check_svg_size(c.svg_path, maps, labels, labels, model_svg_caption(c, layer));
}

// The lesson page's view of a model run: every layer's chosen heads, the prediction and
// the head roles, worded as the terminal words them.
ModelView model_view(const Config& c, const Model& model, const ModelText& text,
                     const ModelResult& r) {
    ModelView view;
    view.prediction_title = "Next character";
    view.maps_title = "Every layer's heads";
    view.maps = model_maps(r.weights, c.view_heads, c.mean_view);
    view.labels = model_labels(text);
    view.caption = model_caption(c, every_layer_title(c) + " (rows: queries, columns: keys)");
    std::ostringstream prediction;
    print_prediction(prediction, top_predictions(r.logits, predictions_shown), model.vocab);
    for (const Tensor& w : r.weights) view.roles.push_back(head_roles(w, text.characters));
    view.prediction = prediction.str();
    return view;
}

// --summary (and --heatmap): the traced layer's score statistics and heads, then every
// layer's head roles.
void show_numbers(std::ostream& out, const Model& model, const ModelText& text,
                  const ModelResult& r, std::size_t layer, const ScoreStats& stats) {
    ForwardResult shown;
    shown.weights = r.weights[layer];
    // the model scales by 1/sqrt(d_k) and has no soft-cap
    stats.print(out, shown, model.d_model() / model.layers[layer].heads, true, 0.0, 0.0);
    print_head_summary(out, head_patterns(r.weights[layer]), {});
    std::vector<std::vector<HeadRoles>> roles;
    for (const Tensor& w : r.weights) roles.push_back(head_roles(w, text.characters));
    print_head_roles(out, roles);
}

// --heatmap: the chosen heads of every layer (one layer, larger, with --layer) under their
// title; `spaced` puts a blank line before the title.
void draw_model_heatmap(std::ostream& out, const Config& c, const std::vector<WeightMap>& maps,
                        const std::vector<std::string>& rows, std::size_t layer, bool spaced) {
    HeatmapStyle style = terminal_style(c.color);
    style.auto_scale = c.auto_scale;
    if (spaced) out << "\n";
    if (!c.layer) {
        style.cell_width = 1;
        const bool chosen = c.mean_view || !c.view_heads.empty();
        write_filled(out,
                     words_of(every_layer_title(c) + " (rows: queries, columns: keys" +
                              (chosen ? ")" : "; --layer L: one layer, larger)")),
                     " ", "", "");
    } else {
        style.narrow_to_fit = true;  // a long text's map in one column per key, not cut
        out << "attention weights of layer " << layer << " (rows: queries, columns: keys)\n";
    }
    draw_heatmaps(out, maps, rows, style);
}

// The text a model run prints after its trace, in reading order: the numbers (--summary or
// --heatmap), the prediction (and --backward's loss), then the picture, right under the
// prediction it explains and last, so that a terminal keeps it on the screen.
void show_views(std::ostream& out, const Config& c, const Model& model, const ModelText& text,
                const ModelBackward& computed, std::size_t layer, const ScoreStats& stats) {
    const ModelResult& r = computed.forward;
    const std::vector<std::string> rows = model_labels(text);
    const std::vector<WeightMap> maps =
        c.layer ? layer_maps(r.weights[layer], layer, c.view_heads, c.mean_view)
                : model_maps(r.weights, c.view_heads, c.mean_view);
    if (wants_summary(c)) show_numbers(out, model, text, r, layer, stats);
    const bool text_format = c.format == Format::Text;
    if (text_format) {
        print_prediction(out, top_predictions(r.logits, predictions_shown), model.vocab);
        if (c.draft_layers) {
            print_acceptance(out,
                             greedy_acceptance(model, text.tokens, *c.draft_layers, *c.draft,
                                               model_run_threads(c)),
                             *c.draft_layers, model.layers.size(), character_words(model.vocab));
        }
        if (c.backward) {
            out << "loss: " << fixed(computed.loss, 4)
                << " nats, the mean cross-entropy of predicting each next character of --text ("
                << counted(text.tokens.size(), "position") << "); its gradients: b23 ... b0\n";
        }
    }
    if (c.heatmap) draw_model_heatmap(out, c, maps, rows, layer, !text_format);
    if (!c.svg_path.empty()) {
        check_stdout();  // a run whose output failed writes no file
        AtomicFile file(c.svg_path);
        SvgStyle style;
        style.caption = model_svg_caption(c, layer);
        style.auto_scale = c.auto_scale;
        write_svg(file.stream(), maps, rows, rows, style);
        file.commit();
    }
}

// --backward: the model reads every character but the last and predicts the next of each.
void split_targets(ModelRun& run) {
    ModelText& text = run.text;
    if (text.tokens.size() < 2) {
        throw Error(
            "--backward on --model predicts each next character of --text, so it needs "
            "at least 2 characters, got " +
            std::to_string(text.tokens.size()));
    }
    run.targets.assign(text.tokens.begin() + 1, text.tokens.end());
    text.tokens.pop_back();
    text.characters.pop_back();
}

// The run traced dry (the model's arrays without values): every step, nothing computed.
void trace_dry(const ModelRun& run, bool backward, Tracer& tracer) {
    const Model dry = without_values(run.model);
    if (backward) {
        model_forward_backward(dry, run.text.tokens, run.targets, run.layer, 1, tracer);
    } else {
        forward_model(dry, run.text.tokens, run.layer, 1, tracer);
    }
}

// The steps the run shows (--step counts them), as a dry run of the model does.
std::size_t model_steps(const ModelRun& run, bool backward) {
    Tally tally;
    trace_dry(run, backward, tally);
    return tally.steps;
}

ModelRun load_run(const Config& c, std::ostream& err) {
    ModelRun run{load_model(c.model_path, c.max_memory), {}, c.layer.value_or(0), {}};
    run.text = encode_text(*c.text, run.model, c.backward);
    if (c.backward) split_targets(run);
    check_choices(c, run.model, run.layer);
    if (c.draft_layers) {
        check_acceptance(run.model.layers.size(), run.model.context(), run.text.tokens.size(),
                         *c.draft_layers, *c.draft);
    }
    if (!c.shapes_only) check_model_budget(c, run);
    if (!c.save_path.empty()) check_writable(c.save_path);
    if (!c.svg_path.empty()) {
        check_writable(c.svg_path);
        check_model_svg_size(c, run.model, run.text, run.layer);
    }
    if (c.format == Format::Html) {
        check_lesson_page(c, model_info(c, run.model, run.text, run.layer, 1),
                          model_steps(run, c.backward), run.model.layers.size());
    }
    if (run.text.unknown > 0) {
        err << "mha: warning: " << counted(run.text.unknown, "character")
            << " of --text are not in the model's vocabulary; read as the unknown token 0\n";
    }
    return run;
}

}  // namespace

std::size_t model_run_threads(const Config& c) { return c.threads == 0 ? 1 : c.threads; }

void run_model_shapes(const Config& c, const ReportFor& report_for, std::ostream& err) {
    const ModelRun run = load_run(c, err);
    const std::size_t n = run.text.tokens.size();
    RunInfo info = model_info(c, run.model, run.text, run.layer, 1);
    info.kernels.clear();
    info.weights_source += " (its sizes)";
    info.shapes_only = true;
    info.activation_bytes = model_pass_bytes(c, run, 1);
    info.activation_tensors =
        std::string(
            "the embedding, one layer's attention and block at a time, every layer's "
            "attention weights, the final norm and the logits") +
        (c.backward ? " with the backward's gradients" : "");
    info.total_macs = model_macs(run.model, n);
    const std::unique_ptr<Report> report = report_for(c.step ? model_steps(run, c.backward) : 0);
    report->begin(info);
    const auto start = std::chrono::steady_clock::now();
    trace_dry(run, c.backward, *report);
    const std::chrono::duration<double, std::milli> elapsed =
        std::chrono::steady_clock::now() - start;
    report->finish(ForwardResult{}, elapsed.count());
}

void run_model(const Config& c, const ReportFor& report_for, std::ostream& out, std::ostream& err) {
    const ModelRun run = load_run(c, err);
    const Model& model = run.model;
    const ModelText& text = run.text;
    const std::size_t layer = run.layer;
    const std::size_t threads = model_run_threads(c);
    check_time(model_macs(model, text.tokens.size()), threads,
               macs_per_thread_second(Form::Packed, AttentionPath::Standard), c.max_time,
               "a shorter --text costs less");
    if (may_overflow(model)) {  // it may stop on overflow: find out before printing anything
        NullTracer quiet;
        check_in_float32(forward_model(model, text.tokens, layer, threads, quiet).logits,
                         "the logits (lm_head)");
    }
    const std::size_t steps = c.step ? model_steps(run, c.backward) : 0;
    const std::unique_ptr<Report> report = report_for(steps);
    report->begin(model_info(c, model, text, layer, threads));
    ScoreStats stats(wants_summary(c));
    TeeTracer tracer(*report, stats);
    const auto start = std::chrono::steady_clock::now();
    ModelBackward computed;
    if (c.backward) {
        computed = model_forward_backward(model, text.tokens, run.targets, layer, threads, tracer);
    } else {
        ModelPass pass;
        pass.keep_hidden = !c.save_path.empty();
        computed.forward = forward_model(model, text.tokens, layer, threads, tracer, pass);
    }
    const ModelResult& r = computed.forward;
    const std::chrono::duration<double, std::milli> elapsed =
        std::chrono::steady_clock::now() - start;
    ForwardResult shown;
    shown.output = r.output;
    shown.weights = r.weights[layer];
    if (c.format == Format::Html) report->model_view(model_view(c, model, text, r));
    report->finish(shown, elapsed.count());
    show_views(out, c, model, text, computed, layer, stats);
    if (!c.save_path.empty()) {
        check_stdout();
        std::vector<std::pair<std::string, Tensor>> arrays = result_arrays(r, layer);
        if (c.backward) {
            for (auto& array : model_arrays(computed.grads, "grad."))
                arrays.push_back(std::move(array));
        }
        npy::write_npz(c.save_path, arrays);
    }
}

}  // namespace mha
