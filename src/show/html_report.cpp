// The lesson page: the header at begin, the steps kept as the pass runs, then at finish the
// heads (a model's prediction and roles), the steps after them, the totals and the script.

#include "show/html_report.h"

#include "core/checked.h"
#include "show/caption.h"
#include "show/explain.h"
#include "show/format.h"
#include "show/kv_pool_picture.h"
#include "show/notes.h"
#include "show/summary.h"
#include "show/svg.h"
#include "show/text_report.h"
#include "show/training_text.h"

#include <cctype>
#include <sstream>

namespace mha {

namespace {

std::string html(const std::string& text) { return xml_escaped(text); }

constexpr const char* style_sheet = R"(
body{font-family:"DejaVu Sans",Helvetica,Arial,sans-serif;margin:0;background:#fafaf7;color:#222;line-height:1.45}
header{padding:18px 28px;background:#fff;border-bottom:1px solid #ddd}
h1{font-size:24px;margin:0 0 6px}
h2{font-size:18px;margin:0 0 8px}
main{padding:12px 28px 80px;max-width:1100px}
code,pre{font-family:"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:14px}
.step{background:#fff;border:1px solid #ddd;border-left:6px solid #ddd;border-radius:4px;padding:12px 16px;margin:12px 0}
.step.current{border-left-color:#3b5ba5;box-shadow:0 0 0 2px #3b5ba5}
.step .number{display:inline-block;min-width:2.2em;color:#3b5ba5}
.layout{border-collapse:collapse;margin:6px 0}
.layout th{text-align:left;font-weight:normal;font-size:13px;color:#666;padding:0 22px 0 0}
.layout td{padding:0 22px 0 0}
.no{color:#a03b00;font-weight:bold}
.why{margin:8px 0 0;padding:8px 12px;background:#f3f6fb;border-radius:4px}
.notes{margin:6px 0;padding-left:20px;color:#333}
pre.grid{background:#f7f7f7;padding:8px;display:inline-block;margin:6px 0}
.maps svg{max-width:100%;height:auto;background:#fff;border:1px solid #ddd}
#status{position:fixed;bottom:0;left:0;right:0;background:#223;color:#fff;padding:8px 28px;font-size:15px}
#readout{float:right;font-family:"DejaVu Sans Mono",Menlo,Consolas,monospace}
.totals{margin:16px 0}
details.config{margin:6px 0}
details.config ul{columns:2;margin:4px 0;font-size:13px}
nav a{margin-right:14px}
.also{border-top:1px dashed #ddd;margin-top:10px;padding-top:6px}
.also h3{font-size:16px;font-weight:normal;margin:0 0 4px}
.prediction{font-size:20px}
table.roles{border-collapse:collapse;margin:6px 0 12px;background:#fff}
table.roles th,table.roles td{border:1px solid #ddd;padding:3px 12px;text-align:right}
table.roles th{background:#f3f6fb;font-weight:normal}
table.roles td.role{text-align:left}
table.roles .strongest{font-weight:bold;background:#eef1fa}
figure.pool{margin:8px 0}
figure.pool svg{max-width:100%;height:auto;border:1px solid #ddd}
)";

// Arrow keys (and j/k, space, Home, End) move between the steps; the status bar names the
// step and the weight under the pointer; #step-5 in the address opens the page at step 5.
constexpr const char* script = R"(
(function () {
  var steps = Array.prototype.slice.call(document.querySelectorAll('section.step'));
  var where = document.getElementById('where');
  var readout = document.getElementById('readout');
  var at = -1;
  function show(i) {
    if (steps.length === 0) return;
    i = Math.max(0, Math.min(steps.length - 1, i));
    if (at !== -1) steps[at].classList.remove('current');
    at = i;
    steps[at].classList.add('current');
    steps[at].scrollIntoView({block: 'center'});
    history.replaceState(null, '', '#step-' + (at + 1));
    where.textContent = (at + 1) + ' of ' + steps.length + ': ' +
                        steps[at].getAttribute('data-title');
  }
  document.addEventListener('keydown', function (e) {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    var keys = {ArrowRight: 1, ArrowDown: 1, j: 1, ' ': 1, ArrowLeft: -1, ArrowUp: -1, k: -1};
    if (e.key in keys) { show(at + keys[e.key]); e.preventDefault(); }
    else if (e.key === 'Home') { show(0); e.preventDefault(); }
    else if (e.key === 'End') { show(steps.length - 1); e.preventDefault(); }
  });
  steps.forEach(function (s, i) { s.addEventListener('click', function () { show(i); }); });
  document.addEventListener('mouseover', function (e) {
    var cell = e.target.closest ? e.target.closest('rect.cell') : null;
    if (!cell) return;
    var panel = cell.closest('g.panel');
    var head = panel ? panel.querySelector('text.title').textContent : '';
    readout.textContent = head + ' | ' + cell.querySelector('title').textContent;
  });
  var linked = /^#step-([0-9]+)$/.exec(location.hash);
  if (linked) show(Number(linked[1]) - 1);
  else where.textContent = steps.length + ' steps: press the right arrow to begin';
})();
)";

// The step's layout as one row under five headings.
std::string layout_table(const Step& step) {
    return "<table class=\"layout\"><tr><th>shape</th><th>strides</th><th>contiguous</th>"
           "<th>copied</th><th>multiply-adds</th></tr><tr><td><code>" +
           html(named_shape(step.dims, step.shape)) + "</code></td><td><code>" +
           to_string(step.strides) + "</code></td><td>" +
           (step.contiguous ? "yes" : "<span class=\"no\">no</span>") + "</td><td>" +
           byte_size(step.copied_bytes) + "</td><td>" + with_commas(step.macs) +
           "</td></tr></table>\n";
}

// One row per layer and head (ranked: the strongest first): the four role scores, the
// strongest in bold, and its name.
std::string roles_table(const std::vector<std::vector<HeadRoles>>& layers, bool ranked) {
    std::string table =
        "<table class=\"roles\"><tr><th>layer</th><th>head</th><th>previous</th><th>first</th>"
        "<th>same</th><th>induction</th><th>strongest</th></tr>\n";
    for (const auto& [l, head] : head_order(layers, ranked)) {
        const HeadRoles& r = layers[l][head];
        const std::string role = strongest_role(r);
        table += "<tr><td>" + std::to_string(l) + "</td><td>" + std::to_string(head) + "</td>";
        const std::pair<const char*, double> scores[] = {
            {"previous", r.previous}, {"first", r.first}, {"same", r.same},
            {"induction", r.induction}};
        for (const auto& [name, value] : scores) {
            table += std::string(role == name ? "<td class=\"strongest\">" : "<td>") +
                     role_score(value) + "</td>";
        }
        table += "<td class=\"role\">" + role + "</td></tr>\n";
    }
    return table + "</table>\n";
}

// The links to the page's sections: a model run's prediction and heads, its roles and
// steps; another run's heatmaps and steps.
std::string contents(const ModelView* model) {
    if (model == nullptr) {
        return "<nav><a href=\"#maps\">Attention weights</a>"
               "<a href=\"#steps\">Step by step</a></nav>\n";
    }
    return "<nav><a href=\"#heads\">" + xml_escaped(model->prediction_title) + " and heads</a>" +
           "<a href=\"#roles\">Head roles</a><a href=\"#steps\">Step by step</a></nav>\n";
}

// A paged cache step's memory picture, or why a pool this large is not drawn.
std::string pool_figure(const PagedFacts& paged) {
    if (!pool_pictured(paged)) {
        return "<p class=\"pool\">The pool holds " + with_commas(paged.pool_blocks * paged.block_size) +
               " slots, more than the " + std::to_string(max_pictured_slots) +
               " a memory picture draws.</p>\n";
    }
    std::ostringstream svg;
    write_kv_pool_svg(svg, paged);
    return "<figure class=\"pool\">\n" + svg.str() +
           "<figcaption>The KV cache's memory once this step has written: each physical block of "
           "the pool coloured by the sequence that owns it, beside each sequence's block "
           "table.</figcaption>\n</figure>\n";
}

}  // namespace

void HtmlReport::write_config_keys(const RunInfo& info) {
    if (info.config_keys.empty()) return;
    out_ << "<details class=\"config\" open><summary>Read from <code>" << html(info.config_file)
         << "</code>: each key and the number it sets</summary>\n<ul>";
    for (const std::string& key : info.config_keys) out_ << "<li><code>" << html(key) << "</code></li>";
    out_ << "</ul>\n</details>\n";
}

void HtmlReport::begin(const RunInfo& info) {
    info_ = info;
    steps_ = 0;
    copied_bytes_ = macs_ = 0;
    steps_html_.str("");
    previous_why_.clear();
    previous_number_.clear();
    previous_name_.clear();
    out_ << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n"
         << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n"
         << "<title>mha: multi-head attention, step by step</title>\n<style>" << style_sheet
         << "</style>\n</head>\n<body>\n<header>\n<h1>Multi-head attention, step by step</h1>\n"
         << "<p class=\"sizes\"><code>" << html(sizes_text(info)) << "</code></p>\n<p>";
    if (!info.tokens.empty()) {
        std::string sentence;
        for (const std::string& token : info.tokens)
            sentence += (sentence.empty() ? "" : " ") + token;
        out_ << "Text: <q>" << html(sentence) << "</q>. ";
    }
    out_ << "Weights: " << html(info.weights_source) << ". Inputs: " << html(info.inputs_source)
         << ". Parameters: " << with_commas(info.parameters) << ".</p>\n";
    for (const std::string& note : info.layout_notes) out_ << "<p>" << html(note) << "</p>\n";
    write_config_keys(info);
    if (info.backward) {
        out_ << "<p>dO: " << html(info.grad_output_source) << "."
             << (info.kept.empty() ? "" : " " + html(sentence(kept_text(info)))) << "</p>\n";
    }
    out_ << "<p class=\"keys\">Keys: &#8594;, &#8595;, Space or j next step; &#8592;, &#8593; or k "
            "the one before; Home and End the first and last. Point at a cell of a heatmap to "
            "read its weight.</p>\n"
         << "</header>\n";
}

void HtmlReport::on_step(const Step& step) {
    const std::string why = explanation(step);
    const std::string number = step_number(step);
    // K's and V's view and transpose repeat Q's step and its explanation: one card for the three
    const bool folded = steps_ > 0 && !why.empty() && why == previous_why_ &&
                        number == previous_number_ && step.name == previous_name_;
    if (folded) {
        steps_html_ << "<div class=\"also\">\n<h3><span class=\"number\">" << number
                    << "</span>" << html(step.name) << " <code>" << html(step.expression)
                    << "</code></h3>\n";
    } else {
        if (steps_ > 0) steps_html_ << "</section>\n";
        ++steps_;
        const std::string title = "step " + number + ", " + step.name + " " + step.tensor;
        steps_html_ << "<section class=\"step\" id=\"step-" << steps_ << "\" data-title=\""
                    << html(title) << "\">\n<h2><span class=\"number\">" << number << "</span>"
                    << html(step.name) << " <code>" << html(step.expression) << "</code></h2>\n";
    }
    if (!step.einops.empty())
        steps_html_ << "<p class=\"einops\">einops: <code>" << html(step.einops) << "</code></p>\n";
    steps_html_ << layout_table(step);
    const std::vector<std::string> notes = step_notes(step);
    if (!notes.empty()) {
        steps_html_ << "<ul class=\"notes\">";
        for (const std::string& note : notes) steps_html_ << "<li>" << html(note) << "</li>";
        steps_html_ << "</ul>\n";
    }
    if (!step.allowed.empty()) {
        std::ostringstream grid;
        write_mask_grid(grid, step.allowed, "");
        steps_html_ << "<pre class=\"grid\">" << html(grid.str()) << "</pre>\n";
    }
    if (step.facts.paged) steps_html_ << pool_figure(*step.facts.paged);
    if (folded) {
        steps_html_ << "</div>\n";
    } else if (!why.empty()) {
        steps_html_ << "<p class=\"why\">" << html(why) << "</p>\n";
    }
    previous_why_ = why;
    previous_number_ = number;
    previous_name_ = step.name;
    copied_bytes_ += step.copied_bytes;
    macs_ += step.macs;
}

void HtmlReport::write_maps(const ForwardResult& result) {
    out_ << "<section class=\"maps\" id=\"maps\">\n<h2>Attention weights</h2>\n";
    if (result.weights.empty() || result.weights.numel() == 0) {
        out_ << "<p>No attention weights were stored in this run"
             << (info_.shapes_only ? " (shapes only)" : "")
             << ", so there is nothing to draw.</p>\n"
             << "</section>\n";
        return;
    }
    MapChoice choice = page_.choice;
    choice.head_names = info_.head_names;
    const std::vector<WeightMap> maps = weight_maps(result.weights, choice, page_.blocked);
    const std::vector<std::string> rows = position_labels(info_.seq_len, info_.tokens);
    const std::vector<std::string> cols = key_labels(info_);
    SvgStyle style;
    style.caption = caption_lines(
        info_, std::string("attention weights, batch 0") + " (rows: queries, columns: keys)");
    style.auto_scale = page_.auto_scale;
    style.standalone = false;
    if (maps.empty() || maps.front().rows != rows.size() || maps.front().cols != cols.size()) {
        out_ << "<p>The weights do not match the positions of this run, so they are not "
                "drawn.</p>\n</section>\n";
        return;
    }
    write_svg(out_, maps, rows, cols, style);
    if (info_.backward) {
        out_ << "<p>The backward's (B, h, N, M) tensors dP and dS are not drawn: these colours "
                "read weights between 0 and 1, and a gradient is signed and unbounded.</p>\n";
    }
    out_ << "</section>\n";
}

void HtmlReport::write_model_view(const ModelView& view) {
    std::string prediction = view.prediction;
    while (!prediction.empty() && std::isspace(static_cast<unsigned char>(prediction.front())))
        prediction.erase(0, 1);
    out_ << "<section class=\"maps\" id=\"heads\">\n<h2>" << html(view.prediction_title)
         << "</h2>\n<p class=\"prediction\">" << html(prediction) << "</p>\n<h2>"
         << html(view.maps_title) << "</h2>\n";
    SvgStyle style;
    style.caption = view.caption;
    style.auto_scale = page_.auto_scale;
    style.standalone = false;
    write_svg(out_, view.maps, view.labels, view.labels, style);
    out_ << "</section>\n<section class=\"roles\" id=\"roles\">\n<h2>Head roles</h2>\n"
         << "<p>The mean weight a head's queries put on the key each role names, on this text"
         << (view.ranked_roles ? ", the strongest role first" : "")
         << " (the strongest score of a head in bold; - : no query of this text qualifies; "
            "examples/models/README.md).</p>\n"
         << roles_table(view.roles, view.ranked_roles) << "</section>\n";
}

void HtmlReport::finish(const ForwardResult& result, double) {
    out_ << "<main>\n" << contents(model_ ? &*model_ : nullptr);
    if (model_) {
        write_model_view(*model_);
    } else {
        write_maps(result);
    }
    out_ << "<h2 id=\"steps\">Step by step</h2>\n" << steps_html_.str();
    if (steps_ > 0) out_ << "</section>\n";
    out_ << "<p class=\"totals\">Total: " << byte_size(copied_bytes_) << " copied, "
         << with_commas(macs_) << " multiply-adds.";
    if (info_.backward) out_ << " " << html(sentence(backward_macs_text(info_)));
    if (info_.shapes_only && !info_.kept.empty())
        out_ << " " << html(sentence(training_memory_text(info_)));
    if (!info_.shapes_only && result.output.numel() > 0) {
        const TensorStats stats = stats_of(result.output);
        out_ << " Output <code>" << html(named_shape({"B", "N", "d_model"}, result.output.shape()))
             << "</code>: mean " << fixed(stats.mean, 4) << ", std " << fixed(stats.std, 4)
             << ", min " << fixed(stats.min, 4) << ", max " << fixed(stats.max, 4) << ".";
    }
    out_ << "</p>\n</main>\n<div id=\"status\"><span id=\"where\"></span>"
         << "<span id=\"readout\"></span></div>\n<script>" << script << "</script>\n"
         << "</body>\n</html>\n";
}

std::uint64_t html_size_bound(std::size_t steps, std::size_t maps, const RunInfo& info,
                              bool pool_drawn) {
    const std::vector<std::string> rows = position_labels(info.seq_len, info.tokens);
    const std::vector<std::string> cols = key_labels(info);
    std::vector<std::string> caption = caption_lines(info, "attention weights, batch 0");
    // the mask grid: each of N lines holds M keys of up to 21 characters, escaped
    const double grid = (double(info.seq_len) + 2) * (double(info.kv_len) + 4) * 22 * 6;
    double header = 8192 + 6 * double(info.weights_source.size() + info.inputs_source.size());
    for (const std::string& token : info.tokens) header += 6 * double(token.size() + 1);
    for (const std::string& note : info.layout_notes) header += 6 * double(note.size()) + 16;
    header += 6 * double(info.config_file.size());
    for (const std::string& key : info.config_keys) header += 6 * double(key.size()) + 32;
    const double total = double(svg_size_bound(maps, rows, cols, caption)) +
                         double(steps) * double(max_step_bytes + (pool_drawn ? max_pool_picture_bytes : 0)) +
                         grid + header;
    return total >= 1.8e19 ? std::uint64_t(1.8e19) : std::uint64_t(total);
}

}  // namespace mha
