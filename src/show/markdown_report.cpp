// --format markdown: the table is written row by row as the forward pass runs.

#include "show/markdown_report.h"

#include "core/checked.h"
#include "show/format.h"
#include "show/notes.h"
#include "show/summary.h"

namespace mha {

namespace {

// A table cell: a | inside would end the cell early.
std::string cell(const std::string& text) {
    std::string escaped;
    for (char c : text) escaped += c == '|' ? std::string("\\|") : std::string(1, c);
    return escaped;
}

std::string code(const std::string& text) { return "`" + cell(text) + "`"; }

std::string heading(const RunInfo& info) {
    const std::size_t d_k = info.head_dim;
    std::string text = "B=" + std::to_string(info.batch) + ", N=" + std::to_string(info.seq_len) +
                       ", M=" + std::to_string(info.kv_len) + ", d_model=" +
                       std::to_string(info.d_model) + ", h=" + std::to_string(info.heads) +
                       ", d_k=" + std::to_string(d_k);
    text += info.self_attention ? ", self-attention" : ", cross-attention";
    text += info.bias ? ", bias" : ", no bias";
    if (info.causal) text += ", causal";
    if (!info.kernels.empty()) text += ", " + info.kernels + " kernels";
    return text;
}

}  // namespace

void MarkdownReport::begin(const RunInfo& info) {
    notes_.clear();
    copied_bytes_ = macs_ = 0;
    shapes_only_ = info.shapes_only;
    out_ << "## Multi-head attention: " << heading(info) << "\n\n"
         << "Weights: " << info.weights_source << ". Inputs: " << info.inputs_source
         << ". Parameters: " << with_commas(info.parameters) << ".\n\n";
    for (const std::string& note : info.layout_notes) out_ << "- " << note << "\n";
    if (!info.layout_notes.empty()) out_ << "\n";
    out_ << "| step | operation | expression | shape | strides | contiguous | copied | MACs |\n"
         << "| ---: | --- | --- | --- | --- | --- | ---: | ---: |\n";
}

void MarkdownReport::on_step(const Step& step) {
    out_ << "| " << step.number << " | " << step.name << " | " << code(step.expression) << " | "
         << cell(named_shape(step.dims, step.shape)) << " | " << to_string(step.strides) << " | "
         << (step.contiguous ? "yes" : "**no**") << " | " << byte_size(step.copied_bytes)
         << " | " << with_commas(step.macs) << " |\n";
    for (const std::string& note : step_notes(step)) {
        notes_.push_back("step " + std::to_string(step.number) + ": " + note);
    }
    copied_bytes_ += step.copied_bytes;
    macs_ += step.macs;
}

void MarkdownReport::finish(const ForwardResult& result, double) {
    out_ << "\n";
    for (const std::string& note : notes_) out_ << "- " << note << "\n";
    out_ << (notes_.empty() ? "" : "\n") << "Total: " << byte_size(copied_bytes_)
         << " copied, " << with_commas(macs_) << " multiply-adds.";
    if (shapes_only_) {
        out_ << " Shapes only: nothing was computed.\n";
        return;
    }
    const TensorStats stats = stats_of(result.output);
    out_ << " Output "
         << named_shape({"B", "N", "d_model"}, result.output.shape()) << ": mean "
         << fixed(stats.mean, 4) << ", std " << fixed(stats.std, 4) << ", min "
         << fixed(stats.min, 4) << ", max " << fixed(stats.max, 4) << ".\n";
}

}  // namespace mha
