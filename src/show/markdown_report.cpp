// --format markdown: the table is written row by row as the forward pass runs.

#include "show/markdown_report.h"

#include "core/checked.h"
#include "io/printable.h"
#include "show/caption.h"
#include "show/kv_ledger_text.h"
#include "show/explain.h"
#include "show/format.h"
#include "show/notes.h"
#include "show/summary.h"
#include "show/text_report.h"
#include "show/training_text.h"

namespace mha {

namespace {

// A table cell: a | inside would end the cell early.
std::string cell(const std::string& text) {
    std::string escaped;
    for (char c : text) escaped += c == '|' ? std::string("\\|") : std::string(1, c);
    return escaped;
}

std::string code(const std::string& text) { return "`" + cell(text) + "`"; }

// Markdown's sanitiser, for text from outside (a file name): the terminal's (io/printable.h),
// then a backslash before each character Markdown or HTML would read as markup, so the
// name shows as typed and no tag or link reaches the page it is pasted into.
std::string markdown_text(const std::string& text) {
    static const std::string markup = "\\`*_[]<>&|#!~";
    std::string escaped;
    for (char c : sanitized(text)) {
        if (markup.find(c) != std::string::npos) escaped += '\\';
        escaped += c;
    }
    return escaped;
}

// The sizes, and the kernels that computed (which the SVG caption leaves out).
std::string heading(const RunInfo& info) {
    return sizes_text(info) + (info.kernels.empty() ? "" : ", " + info.kernels + " kernels");
}

}  // namespace

void MarkdownReport::begin(const RunInfo& info) {
    notes_.clear();
    grids_.clear();
    rows_ = 0;
    explained_.clear();
    previous_.clear();
    explain_ = info.explain;
    copied_bytes_ = macs_ = 0;
    shapes_only_ = info.shapes_only;
    ledger_ = info.kv_ledger;
    backward_ = backward_macs_text(info);
    training_ = info.shapes_only ? training_memory_text(info) : "";
    out_ << "## Multi-head attention: " << heading(info) << "\n\n"
         << "Weights: " << markdown_text(info.weights_source)
         << ". Inputs: " << markdown_text(info.inputs_source)
         << ". Parameters: " << with_commas(info.parameters) << ".\n\n";
    std::vector<std::string> bullets = info.layout_notes;
    if (info.backward) {
        bullets.push_back("dO: " + markdown_text(info.grad_output_source));
        if (!info.kept.empty()) bullets.push_back(kept_text(info));
    }
    for (const std::string& bullet : bullets) out_ << "- " << bullet << "\n";
    if (!bullets.empty()) out_ << "\n";
    out_ << "| step | operation | expression | shape | strides | contiguous | copied | MACs |\n"
         << "| ---: | --- | --- | --- | --- | --- | ---: | ---: |\n";
}

void MarkdownReport::on_step(const Step& step) {
    const std::string einops = step.einops.empty() ? "" : " (einops: " + code(step.einops) + ")";
    out_ << "| " << step_number(step) << " | " << step.name << " | " << code(step.expression)
         << einops << " | " << cell(named_shape(step.dims, step.shape)) << " | "
         << to_string(step.strides) << " | " << (step.contiguous ? "yes" : "**no**") << " | "
         << byte_size(step.copied_bytes) << " | " << with_commas(step.macs) << " |\n";
    for (const std::string& note : step_notes(step)) {
        notes_.push_back("step " + step_number(step) + ": " + note);
    }
    ++rows_;
    if (!step.allowed.empty()) {
        grids_.emplace_back("Step " + step_number(step) + " (row " + std::to_string(rows_) +
                                " of the table)",
                            step.allowed);
    }
    const std::string why = explain_ ? explanation(step) : "";
    if (why != previous_ && !why.empty())
        explained_.push_back("**Step " + step_number(step) + ", " + step.name + ".** " + why);
    previous_ = why;
    copied_bytes_ += step.copied_bytes;
    macs_ += step.macs;
}

void MarkdownReport::finish(const ForwardResult& result, double) {
    out_ << "\n";
    for (const std::string& note : notes_) out_ << "- " << note << "\n";
    if (!notes_.empty()) out_ << "\n";
    for (const auto& [name, allowed] : grids_) {
        if (grids_.size() > 1) out_ << name << ":\n\n";
        out_ << "```\n";
        write_mask_grid(out_, allowed, "");
        out_ << "```\n\n";
    }
    if (!explained_.empty()) {
        out_ << "### What each step does\n\n";
        for (const std::string& paragraph : explained_) out_ << paragraph << "\n\n";
    }
    out_ << "Total: " << byte_size(copied_bytes_) << " copied, " << with_commas(macs_)
         << " multiply-adds" << (backward_.empty() ? "" : " (" + backward_ + ")") << ".";
    if (shapes_only_) {
        out_ << " Shapes only: nothing was computed.";
        if (!training_.empty()) out_ << " " << sentence(training_);
        out_ << "\n";
        if (ledger_) {
            out_ << "\n### KV cache ledger\n\n```text\n";
            for (const std::string& line : kv_ledger_lines(*ledger_)) out_ << line << "\n";
            out_ << "```\n";
        }
        return;
    }
    const TensorStats stats = stats_of(result.output);
    out_ << " Output " << named_shape({"B", "N", "d_model"}, result.output.shape()) << ": mean "
         << fixed(stats.mean, 4) << ", std " << fixed(stats.std, 4) << ", min "
         << fixed(stats.min, 4) << ", max " << fixed(stats.max, 4) << ".\n";
}

}  // namespace mha
